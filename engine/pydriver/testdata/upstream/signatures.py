"""Print, as JSON, the call signatures of what chaperone's driver uses of the esm or
transformers package: for each name, its parameters (name and kind) in order. Run with the real
package and with the tests' stand-in, the two answers are compared (the stand-in must take
every keyword the driver passes, as the real one does).

    python signatures.py esm|transformers
"""

import importlib
import inspect
import json
import sys

USED = {
    "esm": ["esm.models.esmc:EsmcModel.from_pretrained", "esm.models.esmc:EsmcModel.forward",
            "esm.models.esmc:EsmcTokenizer.__call__",
            "esm.models.esmfold2:EsmFold2Model.from_pretrained", "esm.models.esmfold2:EsmFold2Model.load_esmc",
            "esm.models.esmfold2:ESMFold2InputBuilder.__init__", "esm.models.esmfold2:ESMFold2InputBuilder.fold",
            "esm.models.esmfold2:MSA.from_a3m", "esm.models.esmfold2:ProteinInput", "esm.models.esmfold2:Modification",
            "esm.models.esmfold2:StructurePredictionInput"],
    "transformers": ["transformers:EsmModel.from_pretrained", "transformers:EsmModel.forward",
                     "transformers:EsmTokenizer.from_pretrained", "transformers:EsmTokenizer.__call__"],
}


def resolve(name):
    module, _, path = name.partition(":")
    obj = importlib.import_module(module)
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def main():
    out = {}
    for name in USED[sys.argv[1]]:
        params = inspect.signature(resolve(name)).parameters.values()
        out[name] = [{"name": p.name, "kind": p.kind.name} for p in params]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
