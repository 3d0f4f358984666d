"""ESPnet3's ``espnet3.parallel``: its provider and runner bases are Kit's."""
