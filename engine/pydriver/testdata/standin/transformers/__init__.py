"""Stand-in of Hugging Face transformers for chaperone's tests: the ESM classes SaProt is
loaded with (EsmTokenizer, EsmModel), on numpy (see _standin)."""

__version__ = "5.24.0+standin"

from transformers.models.esm.modeling_esm import EsmModel  # noqa: E402
from transformers.models.esm.tokenization_esm import EsmTokenizer  # noqa: E402
