package llm

// Config is the llm section of frontier.yaml.
type Config struct{}
