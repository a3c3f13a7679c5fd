// The Swift client SDK; see the module documentation.
