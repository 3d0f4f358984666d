"""Each general claim of the manual ("every", "always", "never", "no") names what backs it.

The manual is the README, CONTRIBUTING.md and the pages of docs/. A sentence
of it (outside code blocks) with one of those words is
either a claim, listed in ``CLAIMS`` with the tests (or benchmark, or
module whose doctests) that check it, or not one, listed in ``NOT_CLAIMS``
with why. A new such sentence fails here until it is listed: back it with a
test, or rewrite it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.sources import parsed

ROOT = Path(__file__).resolve().parents[1]
GENERAL = re.compile(r"\b(every|always|never|no)\b", re.IGNORECASE)

#: A phrase of the claim's sentence -> what checks it.
CLAIMS: dict[str, list[str]] = {
    "Every process the suite starts ends with it": [
        "tests/test_tiers.py::test_ctrl_c_ends_what_the_suites_tests_started",
    ],
    "A key missing from a section the config has fails the run before anything runs": [
        "tests/reuse/test_stored.py::"
        "test_forward_keys_naming_a_key_the_config_lacks_fail_the_run_before_anything_runs",
    ],
    "and then outputs are never reused": [
        "tests/reuse/test_stored.py::test_a_runner_without_forward_keys_reuses_nothing",
    ],
    "A decoding sweep gets reuse with no change to its config": [
        "tests/asr/test_reuse.py::"
        "test_a_sweep_over_normalisers_decodes_once_and_scores_each_as_a_fresh_decoding_would",
    ],
    "or `runner.reuse=false` to run `forward` on every item": [
        "tests/reuse/test_sweep.py",
    ],
    'so "sea shells" against "seashells" is no error there where sclite counts two': [
        "tests/asr/test_rescore.py::"
        "test_the_open_asr_convention_scores_as_the_leaderboard_and_gates_on_its_wer",
    ],
    "A config whose `items` gives no `stop` then runs the whole set": [
        "tests/test_from_config.py::"
        "test_a_range_without_stop_is_the_providers_whole_set_or_asked_for",
    ],
    "decodes every utterance of `DIR`": [
        "tests/asr/test_kaldi.py::"
        "test_without_an_items_stop_a_data_dir_runs_its_whole_set_and_no_more",
    ],
    "an interval on the mean per-item difference that holds at every look at once": [
        "tests/trials/test_anytime.py",
    ],
    "the chance that any trial of the sweep is ever decided wrongly is at most 5%": [
        "tests/trials/test_anytime.py::"
        "test_a_thousand_null_sweeps_looked_at_after_every_chunk_decide_wrongly_rarely",
    ],
    "Every trial runs the set's items in one": [
        "tests/test_sweep_decided.py::test_every_trial_runs_the_items_in_one_shared_random_order",
    ],
    "A trial in which an item failed is not decided": [
        "kit/_sweeps/decided.py",
    ],
    "over 1,000 null sweeps of 5 trials": [
        "tests/trials/test_anytime.py::"
        "test_a_thousand_null_sweeps_looked_at_after_every_chunk_decide_wrongly_rarely",
        "tests/trials/test_anytime.py::"
        "test_a_difference_of_five_points_is_decided_within_a_third_of_five_hundred_items",
    ],
    "a run that scored nothing passes no gate": [
        "tests/asr/test_rescore.py::"
        "test_a_gate_on_a_run_that_scored_nothing_fails_with_its_own_code",
    ],
    "exits with code 8 when a run did not reach its": [
        "tests/tracking/test_mlflow.py::"
        "test_a_server_that_is_down_is_said_at_once_naming_it_and_no_trial_waits_for_it",
    ],
    "Every field of every record is compared: text exactly": [
        "kit/_base/differences.py",
        "tests/check/test_parity.py::test_an_interpolation_resolved_otherwise_is_named_config",
        "tests/check/test_parity.py::test_float32_on_the_workers_is_named_precision",
    ],
    "Each cause is planted in its own runner": [
        "tests/check/test_parity.py",
        "benchmarks/bench_check.py",
    ],
    "Every item of the whole set is checked as the runner defines it": [
        "tests/check/test_cli.py::test_a_clean_config_passes_with_its_forecast_in_the_json",
        "tests/asr/test_decode_check.py::test_every_recording_of_the_set_is_checked_by_its_header",
    ],
    "reads every recording's header (16 kHz, one channel, 16-bit, present": [
        "tests/asr/test_decode_check.py::test_every_recording_of_the_set_is_checked_by_its_header",
    ],
    "is `slow`, whatever its folder and whether or not it says so": [
        "tests/test_tiers.py::"
        "test_a_test_using_a_browser_a_server_or_the_spoken_corpus_is_slow_unmarked",
    ],
    "a detached driver that starts it: no command line is parsed again": [
        "tests/launch/test_request.py::"
        "test_a_detached_driver_starts_its_sweep_from_the_request_not_a_command_line",
    ],
    "No code of Kit sets a field of a runner after it was built": [
        "tests/launch/test_request.py::"
        "test_no_code_of_kit_sets_a_field_of_a_runner_after_it_was_built",
        "tests/launch/test_request.py::"
        "test_two_requests_of_one_runner_run_into_their_own_folders_and_leave_it_unchanged",
    ],
    "by default not at all, on every handle": [
        "tests/test_futures.py::test_every_handle_cancels_with_one_meaning_of_timeout",
    ],
    "so raising one never loads another wing": [
        "tests/test_public_api.py::test_every_error_class_is_defined_on_the_ground_floor",
    ],
    "`import kit` loads none of numpy, bokeh, ipywidgets": [
        "tests/dist/test_core.py::test_import_kit_in_a_core_install_loads_no_optional_stack",
        "tests/test_import_cost.py::test_import_kit_loads_none_of_the_optional_stacks",
    ],
    "`rtf` over every utterance and `rtf_warm` without each recognizer's first call": [
        "tests/asr/test_rescore.py::"
        "test_each_recognizers_first_call_is_its_warm_up_and_rtf_warm_leaves_it_out"
    ],
    "Every recording is checked before anything is decoded": [
        "tests/asr/test_kaldi.py::"
        "test_bad_kaldi_data_is_refused_naming_the_file_the_line_and_the_utterance"
    ],
    "every cut is checked when the manifest is read": [
        "tests/asr/test_lhotse.py::test_a_cut_the_recognizers_cannot_take_is_refused_naming_it"
    ],
    "`--no-write` only prints": [
        "tests/asr/test_rescore.py::"
        "test_kit_score_scores_stored_hypotheses_again_without_their_audio"
    ],
    "reading a folder never runs the code it names": [
        "tests/asr/test_rescore.py::"
        "test_a_normaliser_a_folder_names_is_imported_only_when_you_name_it"
    ],
    "sclite's `(#C #S #D #I)` equal Kit's for every utterance": [
        "tests/asr/test_sclite.py::"
        "test_kit_counts_every_utterances_words_and_characters_as_sclite_does",
        "tests/asr/test_sclite.py::"
        "test_kit_export_writes_a_decoded_runs_files_that_sclite_scores_as_kit_did",
    ],
    "no other module of `kit` imports it": [
        "tests/test_layers.py::test_the_core_never_imports_the_notebook_ui",
        "tests/test_public_api.py::test_widgets_use_only_kits_public_api",
    ],
    "`make demo` needs no server": [
        "tests/examples/test_asr.py::test_the_demo_prints_both_engines_and_a_wer_table"
    ],
    "resolves everything and lists every missing value at once": [
        "tests/config/test_load.py::test_mandatory_values_stay_missing_until_resolved",
        "tests/test_cli.py::test_missing_values_exit_2",
    ],
    "Their keys always exist, so `tracking.mlflow=true` needs no `+`": [
        "tests/config/test_schema.py::"
        "test_a_tracking_key_is_set_without_a_plus_even_without_the_section"
    ],
    "Every one of these messages, a sweep folder's or a search's included, is laid out": [
        "tests/config/test_errors.py::test_every_config_error_kit_raises_is_built_by_the_one_builder",
        "tests/config/test_errors.py::test_a_config_error_says_what_where_and_the_fix_one_fact_a_line",
    ],
    "Every config problem raises `kit.ConfigError`": [
        "tests/config/test_schema.py::test_an_espnet3_parallel_block_loads_unchanged",
        "tests/config/test_schema.py::test_the_file_named_is_the_one_that_set_the_value",
        "tests/test_cli_fuzz.py::test_generated_yaml_and_overrides",
    ],
    "re-running a notebook cell with the same config reuses the env": [
        "tests/test_workers.py::test_a_new_runner_with_the_same_config_reuses_the_env",
        "tests/test_workers.py::"
        "test_envs_alternating_within_max_envs_never_rebuild_and_the_least_recent_goes_first",
    ],
    "an env any client's run holds is never torn down": [
        "tests/cluster/test_shared_envs.py::"
        "test_switching_engines_never_tears_down_an_env_another_attendee_holds",
        "tests/cluster/test_shared_envs.py::test_an_attendee_that_dies_mid_run_lets_go_of_its_env",
        "tests/cluster/test_env_ledger.py::test_an_env_held_by_another_client_never_goes",
    ],
    "every attendee's runs share its workers and one env (one model) per worker": [
        "tests/cluster/test_shared_envs.py::"
        "test_attendees_with_one_config_build_the_env_once_per_worker",
        "tests/cluster/test_teacher.py::"
        "test_warming_builds_the_env_once_per_worker_before_the_class_uses_it",
    ],
    "builds the config's env (its `provider._target_`) on every worker": [
        "tests/cluster/test_teacher.py::"
        "test_warming_builds_the_env_once_per_worker_before_the_class_uses_it",
    ],
    "BokehJS is served once by the Jupyter server instead of stored in every widget cell's": [
        "tests/widgets/test_flows_in_browser.py::test_the_decoding_check_reaches_its_wer_table",
        "tests/widgets/test_live_views_in_browser.py::"
        "test_the_workshop_dashboard_shows_the_run_it_follows",
        "tests/dist/test_extras.py::"
        "test_notebook_builds_the_widgets_loads_the_magics_and_turns_on_the_server_extension",
    ],
    "so one attendee's code never runs in another's": [
        "tests/cluster/test_shared_envs.py::"
        "test_an_attendees_own_provider_never_runs_in_another_attendees_run",
    ],
    "The attendee whose runs have clearly the fewest items left (no tie) takes all": [
        "tests/cluster/test_run_book.py::"
        "test_only_the_owner_with_clearly_least_left_passes_its_fair_share_and_only_with_burst_left",
        "tests/cluster/test_run_book.py::"
        "test_a_late_small_run_takes_the_cluster_while_its_burst_lasts",
        "tests/cluster/test_run_book.py::"
        "test_a_stream_of_short_runs_takes_a_tenth_of_the_cluster_beyond_its_share_on_average",
        "benchmarks/bench_class.py",
    ],
    "Seating a run and its reports work out again only the shares a change touches": [
        "tests/cluster/test_run_book.py::"
        "test_a_report_shares_out_anew_only_when_seats_or_threads_changed",
        "tests/cluster/test_run_book.py::"
        "test_shares_kept_lazily_always_agree_with_sharing_out_afresh",
    ],
    "never as code that computes it or as a value": [
        "tests/widgets/test_workshop_checks.py::test_the_checks_hold_no_solutions_code_or_value",
    ],
    "builds that config's env on every worker before anyone asks": [
        "tests/cluster/test_class_start.py::"
        "test_one_command_starts_a_class_that_attendees_use_and_ctrl_c_ends",
    ],
    "`kit cluster board TARGET` is the class at a glance": [
        "tests/widgets/test_class_board.py::"
        "test_an_attendees_checks_reach_the_board_without_asking_the_notebook",
        "kit/cluster/_board.py",
    ],
    "so the board asks no notebook": [
        "tests/widgets/test_class_board.py::"
        "test_an_attendees_checks_reach_the_board_without_asking_the_notebook",
    ],
    "if that fails too the worker gets no more of the run's chunks": [
        "tests/test_trial_isolation.py::"
        "test_an_env_missing_on_a_worker_is_built_again_once_not_retried_per_item",
        "tests/test_trial_isolation.py::"
        "test_a_worker_that_cannot_build_the_env_gets_no_more_chunks_and_no_item_fails",
    ],
    "Only when no worker has the env does the run fail, with the reason": [
        "kit/_engine/dask.py",
        "tests/test_provider.py",
    ],
    "so the listing asks no worker": [
        "kit/cluster/_shared.py",
        "tests/cluster/test_teacher.py::"
        "test_warming_builds_the_env_once_per_worker_before_the_class_uses_it",
    ],
    "never from the canceller's `JUPYTERHUB_USER`": [
        "tests/cluster/test_teacher.py::"
        "test_the_teacher_lists_the_class_runs_and_stops_one_without_touching_the_others",
        "tests/cluster/test_teacher.py::test_a_run_is_cancelled_by_its_own_key_and_by_nobody_elses",
    ],
    "so one provider defined alike in two notebooks shares one env per worker": [
        "tests/test_fingerprint.py",
        "tests/cluster/test_shared_envs.py::"
        "test_attendees_defining_one_provider_in_their_notebooks_build_it_once_per_worker",
        "tests/cluster/test_shared_envs.py::"
        "test_a_provider_named_like_another_never_gives_its_env_to_the_other",
        "tests/cluster/test_shared_envs.py::"
        "test_an_attendees_own_provider_never_runs_in_another_attendees_run",
    ],
    "so attendees on one server never number runs in, or read results from": [
        "tests/widgets/test_panels.py::"
        "test_attendees_on_one_server_keep_their_histories_apart_by_default",
        "tests/widgets/test_class_on_jupyterhub.py::"
        "test_a_class_of_three_runs_the_workshop_on_one_cluster_through_jupyterhub",
    ],
    "It runs every exercise on a cluster": [
        "tests/test_notebooks.py::test_04_workshop_runs_with_the_solutions_switch",
        "tests/widgets/test_workshop_checks.py::test_the_class_cluster_comes_from_the_teachers_variable",
    ],
    "`kit cluster runs TARGET` lists every run on the cluster": [
        "tests/cluster/test_teacher.py::"
        "test_the_teacher_lists_the_class_runs_and_stops_one_without_touching_the_others"
    ],
    "An id that names no run, or several, is refused with the runs there are": [
        "tests/cluster/test_run_book.py::"
        "test_a_cancel_names_the_run_by_its_first_characters_and_says_which_runs_there_are",
        "tests/cluster/test_teacher.py::"
        "test_the_teacher_lists_the_class_runs_and_stops_one_without_touching_the_others",
    ],
    "No item failed, and Jain's fairness index": [
        "benchmarks/bench_class.py",
        "tests/cluster/test_shared_envs.py::"
        "test_switching_engines_never_tears_down_an_env_another_attendee_holds",
    ],
    "an env no run has held for `parallel.env_idle_timeout` seconds": [
        "tests/cluster/test_shared_envs.py::"
        "test_an_env_nobody_holds_for_its_idle_timeout_is_torn_down",
        "tests/cluster/test_env_ledger.py::"
        "test_an_env_idle_past_its_timeout_expires_and_a_held_one_never",
    ],
    "an env can never be reused for a run it was not built for": [
        "tests/test_provider.py::test_reading_a_key_outside_env_keys_is_a_named_error_inline",
        "tests/test_workers.py::test_reading_a_key_outside_env_keys_on_a_worker_is_the_named_error",
    ],
    "a default read there is the same in every run": [
        "tests/test_provider.py::test_while_building_the_provider_sees_only_its_env_keys"
    ],
    "each chunk's items are sorted by size and cut into batches": [
        "tests/test_runner.py::test_batches_by_size_group_similar_items_under_the_budget",
        "tests/test_chunk.py::test_each_item_lands_in_one_batch_of_similar_sizes_under_the_budget",
    ],
    "reach every call; one that also exists in the env is an error": [
        "tests/test_inject.py::test_explicit_keywords_reach_forward",
        "tests/test_inject.py::test_an_explicit_keyword_that_is_also_in_the_env_is_an_error",
    ],
    "and chunks of a fixed size (an int `chunk_size`) are never cut": [
        "tests/test_chunk.py::"
        "test_a_budget_cuts_fixed_batches_whole_and_never_batches_made_by_size",
        "tests/test_plan.py::test_a_chunk_may_run_twice_its_expected_time_unless_its_size_was_fixed",
        "tests/engine/test_dask.py::"
        "test_items_behind_a_slow_one_in_its_chunk_are_handed_back_and_run_once",
    ],
    "a chunk it reported done is never run again": [
        "tests/test_store_safety.py::"
        "test_a_driver_killed_at_random_points_of_its_commits_loses_and_duplicates_nothing"
    ],
    "Modules import in one direction: no import cycle": [
        "tests/test_layers.py::test_kit_imports_in_one_direction_lazy_and_typing_imports_included"
    ],
    "`submit()` never waits on the calling thread": [
        "tests/engine/test_submit.py::test_submit_returns_while_the_cluster_is_still_starting",
        "tests/test_runner.py::test_submit_returns_at_once_and_streams_records",
    ],
    "A run always ends in exactly one final `kit.RunStatus`": [
        "tests/engine/test_terminal.py::test_every_end_has_one_final_status_and_the_original_error"
    ],
    "no cluster came up": [
        "tests/engine/test_terminal.py::test_every_end_has_one_final_status_and_the_original_error",
        "tests/engine/test_setup.py::test_cancel_ends_a_run_waiting_for_workers",
    ],
    "Every end emits one `RunFinished` event with that status": [
        "tests/engine/test_terminal.py::test_every_end_has_one_final_status_and_the_original_error",
        "tests/engine/test_terminal.py::test_a_run_that_fails_before_it_starts_emits_only_run_finished",
    ],
    "No thread Kit starts for a run outlives it, but for an env build given up on": [
        "tests/engine/test_terminal.py::test_every_end_has_one_final_status_and_the_original_error",
        "tests/engine/test_setup.py::test_cancel_ends_a_run_stuck_in_setup_and_the_late_env_is_released",
    ],
    "Kit's own errors share one base": [
        "tests/engine/test_terminal.py::test_kit_errors_share_one_base_and_keep_their_builtins"
    ],
    "is its `parallel` section, the same in every mode": [
        "tests/test_runner.py::test_every_mode_gives_the_same_records"
    ],
    "runs there and Kit never closes it": [
        "tests/test_espnet3_parallel.py::test_a_client_of_your_own_runs_the_work_and_stays_open"
    ],
    "so every allocation above 128 KiB is mapped and unmapped anew": [
        "tests/test_workers.py::test_local_workers_keep_glibcs_malloc_defaults_unless_told",
        "benchmarks/bench_asr.py",
    ],
    "Dask's statistical profiler (100 stack samples a second per worker": [
        "tests/test_workers.py::test_local_clusters_sample_lightly_unless_told"
    ],
    "reused by every run and cell": ["tests/test_workers.py::test_sessions_are_reused_and_listed"],
    "A remote scheduler Kit only connected to is never shut down": [
        "tests/test_remote.py::test_shutdown_leaves_a_remote_cluster_running"
    ],
    "closing waits for that restart": [
        "tests/test_faults.py::test_a_session_closed_while_a_killed_worker_restarts_closes_cleanly",
        "tests/engine/test_elastic.py::test_workers_that_join_mid_run_get_work_at_once",
    ],
    "A cluster left with no worker at all for `parallel.startup_timeout`": [
        "tests/engine/test_elastic.py::"
        "test_a_cluster_left_without_workers_ends_the_run_and_resume_completes_it"
    ],
    "so no worker idles while another finishes a big chunk": [
        "tests/test_plan.py::test_auto_starts_with_a_probe_then_grows_towards_half_a_second",
        "tests/test_plan.py::test_auto_shrinks_chunks_towards_the_end",
    ],
    "sends one copy of such a chunk to the idle worker": [
        "tests/test_runner.py::test_a_chunk_queued_behind_a_long_one_runs_on_the_idle_worker",
        "tests/engine/test_backups.py::test_trivial_items_are_forwarded_exactly_once",
    ],
    "Chunks already running are never copied": [
        "tests/test_runner.py::test_a_chunk_queued_behind_a_long_one_runs_on_the_idle_worker"
    ],
    "that must never run twice": [
        "tests/engine/test_backups.py::test_backups_off_never_copies_a_chunk"
    ],
    "takes back every chunk that has arrived in one gather": ["benchmarks/bench_engine.py"],
    "leaving out its waits for the cluster's answers": [
        "tests/engine/test_dask.py::"
        "test_waiting_for_arrivals_or_the_scheduler_is_not_counted_as_the_drivers_work"
    ],
    "near the end no smaller than what keeps it busy all the time": [
        "tests/test_plan.py::test_the_last_chunks_are_no_smaller_than_what_keeps_the_driver_busy"
    ],
    "the same guided chunks sent all at once with no driver in the loop": [
        "benchmarks/bench_scale.py"
    ],
    "Kit's own chunks, list-scheduled at no cost, would take": ["benchmarks/bench_scale.py"],
    "no scheduler that does not know the durations beforehand": [
        "benchmarks/bench_engine.py",
        "tests/engine/test_elastic.py::test_ideal_makespan_of_staggered_workers",
    ],
    "whether they are read is the reader's choice, never the directory's": [
        "tests/test_shared_dir.py::test_a_directory_switched_to_pickle_is_read_without_running_its_code",
        "tests/test_shared_dir.py::test_a_pickle_others_may_change_is_not_read_even_when_allowed",
    ],
    "a file dropped into `chunks/` is never read": [
        "tests/test_store_safety.py::test_a_pickle_dropped_into_chunks_is_never_loaded",
        "tests/test_store_safety.py::test_an_edited_chunk_is_not_trusted_its_items_run_again",
        "tests/test_store_safety.py::test_a_truncated_chunk_is_run_again_with_a_warning_naming_it",
    ],
    "a read-back run missing a chunk is never `completed`": [
        "tests/test_shared_dir.py::test_a_torn_last_ledger_line_is_cut_and_its_chunk_run_again",
        "tests/test_shared_dir.py::test_reading_back_a_run_missing_a_chunk_is_not_completed",
        "tests/test_shared_dir.py::test_a_disk_filling_at_a_random_point_loses_no_committed_record",
    ],
    "no record is lost or duplicated": [
        "tests/test_store.py::test_a_killed_driver_loses_and_duplicates_nothing",
        "tests/test_interrupt.py::test_ctrl_c_cancels_keeps_completed_chunks_and_leaves_no_orphans",
        "tests/test_store_safety.py::"
        "test_a_driver_killed_at_random_points_of_its_commits_loses_and_duplicates_nothing",
        "tests/test_runner.py::test_cancel_keeps_what_is_done",
    ],
    "its items run again each *alone* on a worker of its own": [
        "tests/test_faults.py::"
        "test_an_item_that_keeps_killing_workers_fails_alone_after_retries_plus_2_deaths",
        "tests/test_faults.py::test_a_chunk_lost_once_runs_again_in_pieces_spread_over_the_workers",
    ],
    "A full disk keeps every chunk stored before it": [
        "tests/test_store_safety.py::test_a_full_disk_keeps_the_stored_chunks_and_a_later_run_resumes"
    ],
    "never makes a new one in its place": [
        "tests/test_shared_dir.py::test_a_run_dir_that_vanishes_mid_run_ends_the_run",
        "tests/test_remote.py::test_a_killed_scheduler_ends_the_run_and_a_resume_finishes_it",
    ],
    "What they can make you do by reading it": [
        "tests/test_shared_dir.py::test_a_planted_link_is_refused_and_its_target_left_alone",
        "tests/test_store_safety.py::test_a_job_others_may_edit_is_not_run",
        "tests/test_store_safety.py::"
        "test_cancel_leaves_an_unrelated_process_with_the_recorded_pid_alone",
        "tests/test_shared_dir.py::test_cancel_refuses_a_forged_driver_that_does_not_hold_the_runs_lock",
    ],
    "Each row counts items lost and duplicated": [
        "benchmarks/reliability.py",
        "tests/test_sweep.py::test_trials_share_one_env_per_worker_and_run_side_by_side",
    ],
    "a plain override applies to every trial": [
        "tests/config/test_sweeps.py::test_a_grid_expands_to_the_jobs_of_hydras_own_multirun",
        "tests/test_sweep.py::test_trials_share_one_env_per_worker_and_run_side_by_side",
    ],
    "Reading it runs no code from the folder": [
        "tests/test_cli_run.py::test_a_submitted_sweep_is_watched_cancelled_resumed_and_read_with_attach",
        "tests/test_shared_dir.py::test_a_directory_switched_to_pickle_is_read_without_running_its_code",
    ],
    "each of 3 rounds runs every variant once in a rotated order": ["benchmarks/bench_sweep.py"],
    "A trial that gives neither ends in error": [
        "tests/test_search.py::"
        "test_a_trial_that_gives_no_number_for_the_metric_ends_in_error_saying_what_it_has",
        "tests/test_search.py::test_a_pruned_trial_stops_early_with_its_items_kept",
    ],
    "the trial stops at the next chunk, however busy the machine": [
        "tests/test_search.py::test_a_pruned_trial_stops_early_with_its_items_kept"
    ],
    "no trial is left RUNNING": [
        "tests/test_search.py::test_a_search_driver_killed_mid_trial_resumes_with_no_trial_left_running",
        "tests/test_search.py::test_a_trial_asked_of_optuna_but_not_yet_in_sweep_json_is_not_left_running",
    ],
    "which is no mean of per-utterance WERs": [
        "tests/trials/test_compare.py::test_a_corpus_metric_is_resampled_through_the_runners_summarize"
    ],
    "`kit.load_config` still refuses a sweep": [
        "tests/config/test_overrides.py::test_a_sweep_is_rejected",
        "tests/test_events.py::test_a_subscriber_mid_run_misses_nothing_and_sees_nothing_twice",
    ],
    "Every run emits a stream of small events": [
        "tests/engine/test_terminal.py::test_every_end_has_one_final_status_and_the_original_error",
        "tests/test_events.py::test_a_subscriber_mid_run_misses_nothing_and_sees_nothing_twice",
    ],
    "Every view reads only this stream, never Dask internals": [
        "tests/test_layers.py::test_views_read_the_event_stream_never_dask"
    ],
    "its `report.html` shows every item, metric and failure": [
        "tests/dashboard/test_report.py::test_running_a_finished_run_again_keeps_its_history",
        "tests/dashboard/test_state.py::test_a_resumed_session_goes_on_from_the_history_before_it",
    ],
    "would read every later patch shifted": [
        "tests/widgets/test_live_dashboard.py::"
        "test_redraws_go_whole_until_a_view_has_spoken_then_as_patches"
    ],
    "It has no Dask dashboard link": [
        "tests/dashboard/test_report.py::test_a_cluster_runs_report_links_to_no_dask_dashboard"
    ],
    "written with TensorBoard's own event-file writer; no TensorFlow": [
        "tests/tracking/test_tensorboard.py::test_a_run_logs_running_scalars_and_its_summary_as_it_goes",
        "tests/widgets/test_tracking_box.py::test_the_track_box_exports_the_experiments_runs_and_sweeps",
    ],
    "the workers never talk to a tracker": [
        "tests/tracking/test_mlflow.py::"
        "test_a_run_becomes_an_mlflow_run_with_params_stepped_metrics_artifacts_and_status",
        "tests/test_layers.py::test_the_engine_and_the_workers_never_draw_nor_track",
    ],
    "no JavaScript from a CDN: offline too": [
        "benchmarks/bench_tracking.py",
        "tests/widgets/test_flows_in_browser.py::test_edit_run_and_watch",
        "tests/dashboard/test_report.py::test_the_report_renders_in_chromium_without_network",
    ],
    "every problem of the config as loaded is shown next to its field at once": [
        "tests/widgets/test_config_editor.py::test_every_schema_problem_is_listed_at_its_field_at_once",
        "tests/widgets/test_panels.py::test_run_refuses_a_config_with_problems_and_lists_them_all",
    ],
    "never into the notebooks' folder": [
        "tests/test_scale_out.py::"
        "test_a_config_from_elsewhere_is_saved_with_the_runs_and_never_overwritten",
        "tests/widgets/test_panels.py::test_the_scale_out_command_runs_as_printed_from_the_notebook_folder",
    ],
    "To compare this experiment's own runs (not every run ever stored": [
        "tests/widgets/test_panels.py::test_the_history_compares_like_with_like"
    ],
    "giving both is an error that says so": [
        "tests/widgets/test_panels.py::test_items_given_twice_or_not_at_all_say_where_to_give_them",
        "tests/widgets/test_sweep_view.py::"
        "test_an_experiment_sweeps_the_edited_config_on_the_panel_items_and_cluster",
    ],
    "A bad override is shown under the field and leaves no folder": [
        "tests/widgets/test_sweep_view.py::test_a_bad_sweep_is_shown_under_its_field_and_leaves_no_folder"
    ],
    "do not land under your cells": [
        "tests/examples/test_quickstart.py::test_a_terminal_run_shows_no_distributed_log",
        "tests/widgets/test_flows_in_browser.py::test_the_scale_out_notebook_shows_no_log_noise",
    ],
    "two one-thread workers decode with one thread each": [
        "tests/examples/test_asr.py::"
        "test_decoding_threads_default_to_the_workers_threads_and_inline_to_every_core"
    ],
    "so every digit is made a word of its own on both sides": [
        "kit/asr/wer.py",
        "tests/examples/test_asr.py::test_grammar_mode_beats_the_language_model_on_digits",
    ],
    "Whisper pads every utterance to a 30 s window": [
        "benchmarks/bench_asr.py",
        "tests/examples/test_asr.py::test_whisper_batches_decode_as_one_at_a_time",
    ],
    "Faults never stop a pool": [
        "tests/rl/test_pool.py::test_one_faulty_env_is_rebuilt_and_the_others_go_on",
        "tests/rl/test_shared.py::test_every_requested_episode_comes_back_under_crashes",
    ],
    "a reward must be a number": [
        "tests/rl/test_pool.py::test_one_faulty_env_is_rebuilt_and_the_others_go_on"
    ],
    "A closed pool refuses every command": [
        "tests/rl/test_pool.py::test_a_closed_pool_refuses_every_command_the_same_way_in_every_mode"
    ],
    "cause no timeouts": [
        "tests/rl/test_pool.py::test_a_slow_build_is_not_a_step_timeout",
        "tests/rl/test_shared.py::test_a_slow_build_is_not_a_step_timeout_and_build_timeout_bounds_it",
        "tests/test_make_lab.py::test_a_lab_terminal_has_kit_and_starts_in_the_notebooks_folder",
    ],
    "Each notebook runs top to bottom from a fresh kernel": [
        "tests/test_notebooks.py::test_every_notebook_is_tested"
    ],
    "every exercise is skipped and every solution runs": [
        "tests/widgets/test_workshop.py::test_the_solutions_switch_skips_exercises_and_runs_solutions"
    ],
    "never land in the folder the notebook runs in": [
        "tests/test_jobqueue.py::test_job_output_files_land_in_the_runs_output_directory",
        "tests/test_jobqueue.py::test_where_job_output_files_go_when_no_run_says",
    ],
    "is a `kit.detached.DetachedStatus`": [
        "tests/test_detached.py::test_a_driver_that_dies_is_reported_with_its_log",
        "tests/test_store.py::test_a_killed_driver_loses_and_duplicates_nothing",
    ],
    "never pid 1 or below": [
        "tests/test_store_safety.py::test_cancel_never_signals_pid_one_or_below",
        "tests/test_store_safety.py::"
        "test_cancel_leaves_an_unrelated_process_with_the_recorded_pid_alone",
    ],
    "a secret never lands in a shared folder": [
        "tests/test_store.py::test_a_secret_from_the_environment_is_not_written_to_the_run_dir"
    ],
    "The exit codes are `kit.cli.EXIT_CODES`": [
        "tests/test_cli_run.py::test_kit_run_runs_the_job_and_exits_0",
        "tests/test_cli_run.py::test_kit_run_with_failed_items_exits_1_with_a_summary",
        "tests/test_cli_run.py::test_bad_config_exits_2_without_traceback",
        "tests/test_cli_exit_codes.py::test_a_sweeps_exit_code_says_how_its_trials_ended",
    ],
    "A tracker never holds a run back for long": [
        "tests/tracking/test_mlflow.py::"
        "test_a_server_that_is_down_is_said_at_once_naming_it_and_no_trial_waits_for_it",
        "tests/tracking/test_mlflow.py::"
        "test_a_server_killed_mid_run_holds_the_run_back_seconds_at_most_and_it_is_sent_again",
    ],
    "never a Python traceback": [
        "tests/test_cli_fuzz.py::test_the_corpus_crossed_with_commands_and_overrides",
        "tests/test_cli_run.py::test_an_unexpected_error_is_one_line_unless_debug",
    ],
    "the engine never draws anything": [
        "tests/test_layers.py::test_the_engine_and_the_workers_never_draw_nor_track",
        "tests/test_events.py::test_a_long_run_keeps_a_bounded_history_with_exact_totals",
    ],
    "The engine and the workers never see them": [
        "tests/test_layers.py::test_the_engine_and_the_workers_never_draw_nor_track",
        "tests/test_layers.py::test_no_client_is_taken_from_dasks_globals",
        "tests/test_layers.py::test_kit_rl_pools_collectors_buffers_and_learner_need_no_dask",
    ],
    "What the README and the manual say of Kit in general": [
        "tests/test_claims.py::"
        "test_each_general_claim_of_the_manual_is_listed_with_its_backing_or_as_no_claim"
    ],
    "views never import Dask, the engine never draws": [
        "tests/test_layers.py::test_views_read_the_event_stream_never_dask",
        "tests/test_layers.py::test_the_engine_and_the_workers_never_draw_nor_track",
    ],
    "with no distributed log line on the page and no `slurm-*.out` beside it": [
        "tests/widgets/test_flows_in_browser.py::test_the_decoding_check_reaches_its_wer_table",
        "tests/widgets/test_flows_in_browser.py::test_the_scale_out_notebook_shows_no_log_noise",
    ],
    "reused by every run with the same config": [
        "tests/test_workers.py::test_a_new_runner_with_the_same_config_reuses_the_env"
    ],
    "Every completed chunk is stored in the run folder, and running again resumes": [
        "tests/test_store.py::test_a_killed_driver_loses_and_duplicates_nothing",
        "tests/test_store_safety.py::"
        "test_a_driver_killed_at_random_points_of_its_commits_loses_and_duplicates_nothing",
    ],
    "every command a notebook prints": [
        "tests/test_make_lab.py::test_a_lab_terminal_has_kit_and_starts_in_the_notebooks_folder",
        "tests/widgets/test_scale_out_in_browser.py::"
        "test_the_printed_command_runs_in_a_lab_terminal_and_completes_on_slurm",
    ],
    "Every pool has:": [
        "tests/rl/test_pool.py::test_a_closed_pool_refuses_every_command_the_same_way_in_every_mode",
        "tests/rl/test_choose.py::test_every_mode_by_name",
    ],
    "None of these reads the action": [
        "tests/rl/test_pool.py::test_text_actions_reach_the_env_even_reset_and_close"
    ],
    "the final observation of an episode is always there": [
        "tests/rl/test_workers.py::"
        "test_terminated_and_truncated_are_kept_apart_and_the_final_obs_is_kept"
    ],
    "The messages on every env pipe": [
        "tests/rl/test_protocol.py::test_every_message_starts_with_its_declared_op_as_a_plain_int"
    ],
    "Rebuilds count against `max_restarts`": [
        "tests/rl/test_pool.py::test_a_spent_restart_budget_raises_naming_the_env_and_the_error"
    ],
    "an exception rebuilds that env alone": [
        "tests/rl/test_shared.py::test_an_exception_in_one_env_rebuilds_that_env_alone",
        "tests/rl/test_shared.py::"
        "test_a_crashed_or_hung_process_restarts_and_reports_each_episode_it_broke",
    ],
    "Every episode's env seed and action generator": [
        "tests/rl/test_collect.py::"
        "test_episodes_are_identical_whatever_the_number_of_envs_and_the_mode"
    ],
    "The training and evaluation streams never share a seed": [
        "tests/rl/test_collect.py::test_training_and_evaluation_seeds_never_coincide",
        "tests/rl/test_collect.py::test_the_global_numpy_rng_is_never_touched",
    ],
    "whose action is the dict of every agent's action": [
        "tests/rl/test_battle.py::test_battles_in_any_pool_match_the_in_process_ones"
    ],
    "plays the same evaluation episodes every time": [
        "tests/rl/test_battle.py::test_the_evaluator_counts_wins_on_both_sides",
        "tests/rl/test_distributed.py::test_evaluation_stream_reruns_the_same_ids_with_other_seeds",
    ],
    "fires every `eval_freq` iterations": [
        "tests/rl/test_evaluate.py::test_should_eval_by_frequency"
    ],
    "runs of consecutive steps of one episode, never across its end": [
        "tests/rl/test_buffer.py::test_sequences_are_consecutive_steps_of_one_episode"
    ],
    "Pushed data is never modified": ["tests/rl/test_buffer.py::test_user_data_is_never_mutated"],
    "saves every n iterations and at the end": [
        "tests/rl/test_learner.py::test_checkpoints_save_and_resume",
        "tests/rl/test_learner.py::test_log_reduction_empties_the_buffer",
    ],
    "the run ends at once, and no plugin stays registered": [
        "tests/test_workers.py::test_a_failing_setup_fails_at_once_and_leaves_nothing_registered"
    ],
    "No worker joined within `parallel.startup_timeout`, or every worker left": [
        "tests/engine/test_elastic.py::"
        "test_a_cluster_left_without_workers_ends_the_run_and_resume_completes_it"
    ],
    "`kit.sweep` runs every trial of a grid": [
        "tests/test_sweep.py::test_trials_share_one_env_per_worker_and_run_side_by_side"
    ],
    "Every error and warning is in `kit.errors`": [
        "tests/test_public_api.py::test_every_error_and_warning_is_in_kit_errors",
    ],
    "the build stops when a notebook's code no longer matches its stored outputs": [
        "tests/test_docs.py::test_outputs_stored_for_other_code_stop_the_build",
        "tests/test_docs.py::test_the_slow_notebooks_show_the_outputs_stored_for_their_code",
    ],
    "They wait no longer than starting a probe on each of them would take the cluster": [
        "tests/engine/test_pace.py::"
        "test_on_many_slots_a_few_probe_and_the_rest_wait_for_one_to_come_back",
        "tests/engine/test_dask.py::test_slots_that_wait_for_a_probe_get_one_when_the_wait_ends",
    ],
    "the cluster starts tasks at no more than three quarters of the rate it can": [
        "tests/test_plan.py::test_the_cluster_s_least_is_reached_at_once_after_the_probe_not_by_growth",
        "tests/test_plan.py::test_the_last_chunks_are_no_smaller_than_what_the_cluster_starts_at_ease",
        "tests/engine/test_pace.py::test_the_first_wave_s_starts_set_the_cluster_s_time_per_task",
        "benchmarks/bench_scale.py",
    ],
}

#: A phrase of a sentence that uses the words without claiming a rule -> why.
NOT_CLAIMS: dict[str, str] = {
    "so no file name ever reaches a program": [
        "tests/asr/test_lhotse.py::test_no_audio_file_name_reaches_a_shell_whatever_its_extension",
    ],
    "Every file Kit writes whole (a run's files": [
        "tests/test_atomic.py::test_a_file_kit_keeps_is_never_renamed_over_a_device",
        "tests/test_atomic.py::test_a_report_onto_a_device_is_refused_naming_it",
        "tests/test_atomic.py::test_a_link_in_a_folder_kit_keeps_is_refused_not_replaced",
    ],
    "`Runner` declares these hooks itself (no mixins)": [
        "tests/test_task.py::test_a_method_that_would_replace_kits_own_is_refused_naming_it",
        "tests/test_task.py::test_a_hook_of_another_shape_is_refused_naming_how_kit_calls_it",
        "tests/test_task.py::test_reading_and_running_leave_the_runner_and_its_class_as_they_were",
    ],
    "the import graph, typing imports included, has no circle": [
        "tests/test_layers.py::test_kit_imports_in_one_direction_lazy_and_typing_imports_included",
    ],
    "Anyone who can write a run directory": "the trust model's premise, not Kit's behaviour",
    '`make lab LAB_ARGS="--no-browser': "an option's spelling",
    "The tests use real components": "what the suite is made of; each test is its own backing",
    "An editable install has no such file": "what jupyter_server 2 does, not Kit's behaviour",
    "And you always want to see it in the superlative degree": "a quoted ARCTIC prompt",
}


def manual() -> str:
    """The README, CONTRIBUTING.md and every page of docs/ (not the generated ones)."""
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    return "\n\n".join(page.read_text(encoding="utf-8") for page in pages)


def sentences(text: str) -> list[str]:
    """The sentences outside code blocks, whitespace made single spaces."""
    prose = re.sub(r"\s+", " ", re.sub(r"```.*?```", "", text, flags=re.DOTALL))
    return re.split(r"(?<=[.!?:])\s+(?=[A-Z`*(])", prose)


def exists(backing: str) -> bool:
    """Whether a test id, or a benchmark or module path, names something there."""
    path, _, name = backing.partition("::")
    file = ROOT / path
    if not file.is_file():
        return False
    if not name:
        return True
    tree = parsed(file)
    return any(isinstance(node, ast.FunctionDef) and node.name == name for node in ast.walk(tree))


def test_each_general_claim_of_the_manual_is_listed_with_its_backing_or_as_no_claim() -> None:
    phrases = [*CLAIMS, *NOT_CLAIMS]
    unlisted = [
        sentence[:160]
        for sentence in sentences(manual())
        if GENERAL.search(sentence) and not any(phrase in sentence for phrase in phrases)
    ]
    assert unlisted == [], "back each with a test in CLAIMS, or rewrite it"


def test_every_listed_phrase_is_still_in_the_manual() -> None:
    prose = " ".join(sentences(manual()))
    gone = [phrase for phrase in [*CLAIMS, *NOT_CLAIMS] if phrase not in prose]
    assert gone == []


def test_every_backing_named_exists() -> None:
    missing = [backing for backed in CLAIMS.values() for backing in backed if not exists(backing)]
    assert missing == []
