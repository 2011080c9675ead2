"""The rendered variables, one module per phase (and `common` for what every phase reads). Each module maps
the plan (and plain spec values) to the variables of its phase's roles; none decides anything."""
