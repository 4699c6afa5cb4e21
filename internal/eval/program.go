package eval

// CheckProgram refuses src, named name, when it is not a Python program
// at all (empty, binary, not a .py file): what Evaluate refuses first,
// for a caller to refuse before it spends seconds on Python.
func CheckProgram(src []byte, name string) error { return checkProgram(src, name) }
