package mcptool

// stdioSupported reports nil: this system can wait for a server without
// reaping it, which stopping its whole process group safely needs.
func stdioSupported() error { return nil }
