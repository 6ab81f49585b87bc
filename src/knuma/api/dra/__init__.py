"""Dynamic Resource Allocation, `resource.k8s.io/v1`: ResourceSlice, DeviceClass, ResourceClaim and
ResourceClaimTemplate as immutable data, parsed and validated with the API server's rules (`pkg/apis/resource/
validation/validation.go`) and errors that name the field path."""
