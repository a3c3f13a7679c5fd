// The PostgreSQL store; see the module documentation.
