// Package execfile writes executable files (test tools, stand-in wrappers) that the same
// process runs soon after.
//
// A file this process holds open for writing cannot be executed ("text file busy") while
// any child it forked meanwhile has not yet reached exec: the child inherits the open
// descriptor for that moment, close-on-exec or not (golang/go#22315). In a test binary,
// where parallel tests start processes all the time, writing a script with os.WriteFile and
// running it at once fails now and then. So the file is written by a child process: this
// process never holds it open, and no fork of its own can keep it busy.
package execfile

import (
	"fmt"
	"os/exec"
	"strings"
)

// Write creates or replaces the executable file at path with content.
func Write(path, content string) error {
	cmd := exec.Command("/bin/sh", "-c", `cat > "$1" && chmod 755 "$1"`, "sh", path)
	cmd.Stdin = strings.NewReader(content)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("writing %s: %v %s", path, err, out)
	}
	return nil
}
