package idp

import "strings"

// placeholderMarks are what example files write where a secret belongs
// (this repository's deploy/k8s/secret.example.yaml among them). A
// session secret anyone can read in an example seals cookies that anyone
// can forge, however long it is.
var placeholderMarks = []string{
	"replace-with", "replace_with", "replace-me", "replace_me", "replaceme",
	"change-me", "change_me", "changeme", "placeholder", "your-secret",
	"your_secret", "insert-secret", "xxxxxxxx",
}

// placeholderSecret returns the placeholder mark secret contains (compared
// ignoring case: "replace-with", "changeme", "placeholder", ...), or ""
// for none. Config.Validate refuses a session secret with one.
func placeholderSecret(secret []byte) string {
	s := strings.ToLower(string(secret))
	for _, m := range placeholderMarks {
		if strings.Contains(s, m) {
			return m
		}
	}
	return ""
}
