// The FCM HTTP v1 transport; see the module documentation.
