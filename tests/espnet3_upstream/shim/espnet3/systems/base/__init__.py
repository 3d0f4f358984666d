"""ESPnet3's ``espnet3.systems.base``: inference's provider, runner and stage are Kit's."""
