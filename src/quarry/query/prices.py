"""The price table usage reports estimate cost with (docs/usage.md#estimated-cost): genai-prices, pinned in
pyproject.toml, whose data ships inside the package (nothing is fetched at run time).

A reply's tokens are priced the way genai-prices prices one request: its input is Quarry's uncached input plus
the cache reads and writes (genai-prices counts cached tokens inside the input and prices each kind at its
own rate). A report prices the sum of many replies per model, so the rates are read off genai-prices once per
model, each from a request of `_PROBE` tokens of one kind: below every tier's threshold, so sums are priced
at the base tier, not at the tier a sum of many small replies would cross. A per-request fee, where a model
has one, is charged once per reply.

A model genai-prices does not know, or knows without a price for input or output tokens, has no rates: its
tokens are reported as unpriced, never priced at 0. `provider/model` names (as some agents record them) are
looked up under that provider when the whole name is not found.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

import genai_prices

PRICE_TABLE = f"genai-prices {genai_prices.__version__}"
_PROBE = 1000  # tokens of one kind per rate probe: below every tier threshold of the table
MAX_MODEL_CHARS = 200  # a longer model name is no model of the table: unpriced without a lookup


@dataclass(frozen=True)
class Tokens:
    """Token counts of one reply or of a sum of replies, as Quarry records them (input is uncached)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(*(a + b for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(other), strict=True)))

    def __sub__(self, other: Tokens) -> Tokens:
        return Tokens(*(a - b for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(other), strict=True)))

    def floored(self) -> Tokens:
        """These counts, none below 0."""
        return Tokens(*(max(0, n) for n in dataclasses.astuple(self)))

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def usage(self) -> genai_prices.Usage:
        """The genai-prices usage of these tokens as one request (its input includes the cached tokens)."""
        return genai_prices.Usage(
            input_tokens=self.input + self.cache_read + self.cache_write,
            output_tokens=self.output,
            cache_read_tokens=self.cache_read,
            cache_write_tokens=self.cache_write,
        )


@dataclass(frozen=True)
class Rates:
    """USD per token of each kind, and per reply, of one model at its base tier."""

    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal
    request: Decimal

    def cost(self, tokens: Tokens, replies: int) -> Decimal:
        """What `replies` replies holding `tokens` in all cost."""
        return (
            tokens.input * self.input
            + tokens.output * self.output
            + tokens.cache_read * self.cache_read
            + tokens.cache_write * self.cache_write
            + replies * self.request
        )


class PriceTable:
    """The table's rates per model at one instant (a model's price may change over time), looked up once."""

    def __init__(self, at_ms: int) -> None:
        self.at = datetime.fromtimestamp(at_ms / 1000, UTC)
        self._rates: dict[str, Rates | None] = {}

    def rates(self, model: str) -> Rates | None:
        """The model's rates; None when the table has no price for it."""
        if model not in self._rates:
            self._rates[model] = self._look_up(model)
        return self._rates[model]

    def _look_up(self, model: str) -> Rates | None:
        if not model or len(model) > MAX_MODEL_CHARS:
            return None
        refs = [(model, None)]
        if "/" in model:  # `anthropic/claude-sonnet-4`: that provider's model
            provider, name = model.split("/", 1)
            refs.append((name, provider))
        for ref, provider_id in refs:
            try:
                return self._probe(ref, provider_id)
            except LookupError:
                continue
        return None

    def _probe(self, model: str, provider_id: str | None) -> Rates | None:
        def price(**usage: int) -> genai_prices.types.PriceCalculation:
            with warnings.catch_warnings():  # a table entry's unsupported keys: not ours to report per call
                warnings.simplefilter("ignore")
                return genai_prices.calc_price(
                    genai_prices.Usage(**usage), model, provider_id=provider_id, genai_request_timestamp=self.at
                )

        base = price()
        if base.model_price.input_mtok is None or base.model_price.output_mtok is None:
            return None  # priced by something else (images, audio, requests alone): no token price

        def rate(**usage: int) -> Decimal:
            return (price(**usage).total_price - base.total_price) / _PROBE

        return Rates(
            input=rate(input_tokens=_PROBE),
            output=rate(output_tokens=_PROBE),
            cache_read=rate(input_tokens=_PROBE, cache_read_tokens=_PROBE),
            cache_write=rate(input_tokens=_PROBE, cache_write_tokens=_PROBE),
            request=base.total_price,
        )
