"""ESPnet3's ``espnet3.systems``."""
