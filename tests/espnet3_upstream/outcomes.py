"""A pytest plugin: ESPnet3's tests Kit fails on purpose, each marked with its reason.

The marks are strict: a test that starts passing fails the run, so the list
(and the count in ``docs/decoding.md``) is brought up to date.
"""

from __future__ import annotations

import pytest

RUNNER = "test/espnet3/systems/base/test_inference_runner.py::"
PROVIDER = "test/espnet3/systems/base/test_inference_provider.py::"
STAGE = "test/espnet3/systems/base/test_inference.py::"
PARALLEL_PROVIDER = "test/espnet3/parallel/test_inference_provider.py::"
PARALLEL_RUNNER = "test/espnet3/parallel/test_inference_runner.py::"

CHECKED_PROVIDER = (
    "Kit's Runner checks that its provider is a kit.EnvironmentProvider when the runner is "
    "made, so a wrong one fails where it was given; the test gives a bare object"
)
WORKERS_BUILD = (
    "the test's provider defines build_dataset on the instance, and Kit runs `parallel: "
    "{env: local}` on a local cluster as the config says, where the env is built from the "
    "class (as ESPnet3's own build_worker_setup_fn builds it); the test passes upstream only "
    "because it patches ESPnet3's module-global set_parallel to run in the driver, a global "
    "Kit does not have"
)
RUNNERS_ARE_RUNNERS = (
    "Kit refuses a runner that is not a kit.Runner before the provider and dataset are "
    'built, in ESPnet3\'s words for that ("must provide inference runner attributes"); '
    "ESPnet3 runs it and refuses its results afterwards"
)
NO_CONTRACTS = "Kit has no inference contracts (ESPnet3's `inference_contract` declarations)"
NO_RECIPE_DIR = (
    "Kit's build_model does not change the working directory to a recipe_dir (it reads "
    "none), so there is nothing to keep apart between concurrent builds"
)
RUNNER_CALL = (
    "a kit.Runner called directly returns a RunResult (records, failures, stats); ESPnet3's "
    "BaseRunner returns the list of outputs, as kit.asr.InferenceRunner does"
)
SHARDS = (
    "Kit's Runner keeps its records in its checked run folder and has no shard files "
    "(`shard_subdir`) or shard merge hooks"
)

#: Test id (file, then test name) and why Kit differs from ESPnet3 there.
EXPECTED_FAILURES: dict[str, str] = {
    RUNNER + "test_resolve_idx_key_uses_default_utt_id": CHECKED_PROVIDER,
    RUNNER + "test_resolve_idx_key_uses_explicit_configured_key": CHECKED_PROVIDER,
    RUNNER + "test_resolve_idx_key_rejects_missing_configured_key": CHECKED_PROVIDER,
    RUNNER + "test_forward_batched_rejects_mixed_optional_input": NO_CONTRACTS,
    PROVIDER + "test_concurrent_model_builds_keep_their_working_directories[False]": NO_RECIPE_DIR,
    PROVIDER + "test_concurrent_model_builds_keep_their_working_directories[True]": NO_RECIPE_DIR,
    STAGE + "test_build_model_does_not_import_from_the_recipe_dir": NO_RECIPE_DIR,
    STAGE + "test_inference_rejects_runner_without_shard_outputs": RUNNERS_ARE_RUNNERS,
    STAGE + "test_infer_rejects_in_memory_results": RUNNERS_ARE_RUNNERS,
    STAGE + "test_materialize_output_value_rejects_top_level_list": (
        "tests ESPnet3's private helper _materialize_output_value, which Kit does not have; "
        "Kit refuses a top-level list in ESPnet3's words when it writes the .scp files "
        "(tests/asr/test_inference.py)"
    ),
    PARALLEL_PROVIDER + "test_build_worker_setup_fn_rebuilds_env_and_captures_params": (
        "the test counts 3 builds for two calls of the setup function; ESPnet3's own "
        "build_worker_setup_fn builds twice there too, as Kit's does"
    ),
    PARALLEL_RUNNER + "test_offline_on_example": RUNNER_CALL,
    PARALLEL_RUNNER + "test_streaming_on_example": RUNNER_CALL,
    PARALLEL_RUNNER + "test_parallel_shards_offline_with_base_runner": SHARDS,
    PARALLEL_RUNNER + "test_parallel_shards_streaming_with_base_runner": SHARDS,
    PARALLEL_RUNNER + "test_run_parallel_dask_merge_preserves_shard_order": SHARDS,
    PARALLEL_RUNNER + "test_run_parallel_dask_releases_lock_for_real_inference_provider": SHARDS,
}
EXPECTED_FAILURES.update(
    (STAGE + name, WORKERS_BUILD)
    for name in (
        "test_inference_writes_scp_outputs",
        "test_inference_passes_provider_params",
        "test_inference_without_output_fn_uses_model_output",
        "test_infer_applies_contract_through_runner_and_writes_output",
        "test_inference_without_idx_key_uses_default_utt_id",
        "test_inference_with_explicit_idx_key_override",
        "test_inference_with_explicit_output_keys_filters_scp_outputs",
        "test_inference_writes_artifacts_from_config",
        "test_inference_runner_streams_split_outputs_and_merges_scp",
        "test_inference_writes_dict_artifacts_as_json",
        "test_inference_writes_artifacts_with_custom_writer",
        "test_inference_rejects_top_level_list_outputs",
        "test_inference_without_output_fn_requires_utterance_id",
        "test_infer_accepts_string_output_key",
        "test_infer_rejects_results_with_no_output_keys",
    )
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test listed in EXPECTED_FAILURES as a strict expected failure."""
    for item in items:
        reason = EXPECTED_FAILURES.get(item.nodeid)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
