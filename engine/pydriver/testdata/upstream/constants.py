"""Print, as JSON, the Hugging Face repositories the installed esm names for its models (its
own constants), for chaperone's tier to hold the engine's model table to them."""

import json

from esm.models.esmc.config import ESMC_6B_HF_REPO, ESMC_300M_HF_REPO, ESMC_600M_HF_REPO
from esm.models.esmfold2 import ESMFOLD2_HF_REPO, EsmFold2Config

print(json.dumps({"esmc-300m": ESMC_300M_HF_REPO, "esmc-600m": ESMC_600M_HF_REPO, "esmc-6b": ESMC_6B_HF_REPO,
                  "esmfold2": ESMFOLD2_HF_REPO, "esmfold2 backbone": EsmFold2Config().esmc_id}))
