package pydriver

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/chaperone-bio/chaperone/engine"
)

// A model's weights come from its Hugging Face repository by default (from_pretrained
// downloads it into the hub cache on first use). A GPU node without internet names a
// folder instead: --tool MODEL=DIR, MODEL a catalog model id (--tool esmc-300m=/models/
// ESMC-300M), or CHAPERONE_TOOL_<MODEL> with the id upper-cased and every other character
// an underscore (CHAPERONE_TOOL_SAPROT_1_3B). The folder is what the repository holds
// (config.json and *.safetensors; SaProt's tokenizer files; ESMFold2's ccd.pkl). ESMFold2
// takes its ESM C backbone from the esmc-6b folder when one is named.

// weightsFolder is the folder the operator named for model id, "" when none.
func weightsFolder(tools engine.Tools, id string) string {
	if dir := tools[id]; dir != "" {
		return dir
	}
	return tools[envKey(id)]
}

// envKey is id as CHAPERONE_TOOL_<NAME> spells it once --tool's environment reader has
// lower-cased the name: esmc-300m → esmc_300m, saprot-1.3b → saprot_1_3b.
func envKey(id string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, strings.ToLower(id))
}

// folderBytes is the size of the weight files in dir, the estimate of what loading them
// takes; 0 when it holds none.
func folderBytes(dir string) int64 {
	var n int64
	for _, pattern := range []string{"*.safetensors", "*.bin", "*.pt"} {
		files, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range files {
			if info, err := os.Stat(f); err == nil {
				n += info.Size()
			}
		}
	}
	return n
}
