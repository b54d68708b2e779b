"""Shape rules per op family; each module registers with ``@shape_rule``."""
