package evolve

// Config is the evolve section of frontier.yaml.
type Config struct{}
