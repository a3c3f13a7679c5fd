// The APNs transport; see the module documentation.
