"""The 2026-07-28 era: per-request `_meta`, `server/discover`, input-required rounds, sealed state.

Every request stands alone. Its envelope is validated on arrival; on the
three methods that may take several rounds, an echoed `requestState` is
unsealed and checked against the request before any handler sees it, and a
round's outgoing state is sealed on the way out. Handlers and the resolver
engine only ever see plaintext.

One idea a module:

- `_envelope`: the `_meta` envelope checked on arrival (an unsupported
  version answered with the supported ones), a result's filled in on the
  way out, and `server/discover`;
- `_request_state`: the sealing step, a requestState opened (and a
  single-use one claimed) before the call and sealed after it;
- `_rounds`: the batch questioner, which answers from `inputResponses` or
  asks again in an `InputRequiredResult`;
- `_dispatch`: `respond`, the one path from envelope to seal, with the
  middleware chain as an optional layer around the same core.
"""

from ._dispatch import REMOVED_METHODS, respond
from ._envelope import discover, finish_result
from ._request_state import BindingOnce, open_state, seal_state, state_binding
from ._rounds import MULTI_ROUND_METHODS, BatchQuestioner

__all__ = [
    "MULTI_ROUND_METHODS",
    "REMOVED_METHODS",
    "BatchQuestioner",
    "BindingOnce",
    "discover",
    "finish_result",
    "open_state",
    "respond",
    "seal_state",
    "state_binding",
]
