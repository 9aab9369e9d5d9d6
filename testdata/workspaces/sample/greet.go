package sample

func Greet(name string) string {
	return "Hello, " + name
}
