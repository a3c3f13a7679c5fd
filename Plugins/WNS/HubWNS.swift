// The WNS transport; see the module documentation.
