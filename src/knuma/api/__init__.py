"""API objects: NodeResourceTopology, pods and resource lists, as plain immutable data."""
