"""Where the kubelet serves the PodResources API by default."""

DEFAULT_SOCKET = "unix:///var/lib/kubelet/pod-resources/kubelet.sock"
