"""acres-gym: a 120 Hz Polaris Ranger CREW XP 1000 model with its Dataspeed drive-by-wire layer."""
