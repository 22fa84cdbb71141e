package startup

// EnvLookup is env as an os.LookupEnv replacement, for callers that run a
// binary in-process with an environment of its own (nil: an empty one).
func EnvLookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}
