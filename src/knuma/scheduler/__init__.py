"""The scheduler core: framework, plugins, scoring strategies and profiles. Pure: no network."""
