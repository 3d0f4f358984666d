"""ESPnet3's module names, mapped onto Kit for ESPnet3's own tests (``tests/espnet3_upstream``)."""
