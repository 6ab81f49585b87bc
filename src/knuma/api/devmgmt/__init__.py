"""The k8srm device-management prototype's API (`devmgmtproto.k8s.io/v1alpha1`), the model DRA grew out of."""
