"""The estimate of a usage report (quarry.query.prices, quarry.query.usage.Estimate): a known model's replies
cost what genai-prices says their requests cost; a sum of replies is priced reply by reply (at the base tier,
not at the tier the sum would cross); a model the table does not price is counted as unpriced, with its
tokens, and never priced at 0."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import genai_prices
import pytest

from quarry.query.prices import PRICE_TABLE, PriceTable, Tokens
from quarry.query.usage import Estimate, Sums

AT_MS = int(datetime(2026, 6, 20, tzinfo=UTC).timestamp() * 1000)
AT = datetime.fromtimestamp(AT_MS / 1000, UTC)


def genai_price(tokens: Tokens, model: str) -> Decimal:
    """What genai-prices charges for one request of these tokens (its input counts the cached ones)."""
    usage = genai_prices.Usage(
        input_tokens=tokens.input + tokens.cache_read + tokens.cache_write,
        output_tokens=tokens.output,
        cache_read_tokens=tokens.cache_read,
        cache_write_tokens=tokens.cache_write,
    )
    return genai_prices.calc_price(usage, model, genai_request_timestamp=AT).total_price


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "gpt-5-codex", "gemini-2.5-pro"])
@pytest.mark.parametrize(
    "tokens", [Tokens(1000, 100, 500, 300), Tokens(input=12), Tokens(output=7), Tokens(3, 0, 40_000, 0)]
)
def test_a_known_models_reply_costs_what_genai_prices_says(model: str, tokens: Tokens) -> None:
    rates = PriceTable(AT_MS).rates(model)
    assert rates is not None
    assert rates.cost(tokens, 1) == genai_price(tokens, model) > 0


def test_a_sum_of_replies_is_priced_reply_by_reply_below_the_tiers() -> None:
    # claude-sonnet-4-5 charges more for a request past 200k input tokens: three replies of 100k do not cross it
    reply = Tokens(input=100_000, output=1_000)
    three = reply + reply + reply
    rates = PriceTable(AT_MS).rates("claude-sonnet-4-5")
    assert rates is not None
    assert rates.cost(three, 3) == 3 * genai_price(reply, "claude-sonnet-4-5")
    assert rates.cost(three, 3) < genai_price(three, "claude-sonnet-4-5")  # one request of 300k would cross it


def test_a_provider_prefixed_model_is_priced_as_that_providers_model() -> None:
    table = PriceTable(AT_MS)
    assert table.rates("anthropic/claude-sonnet-4-5") == table.rates("claude-sonnet-4-5") is not None


@pytest.mark.parametrize("model", ["mystery-model-9", "", "<synthetic>", "dall-e-3", "claude-sonnet-4-5" + "x" * 300])
def test_a_model_without_a_token_price_has_no_rates(model: str) -> None:
    assert PriceTable(AT_MS).rates(model) is None


def test_an_unknown_models_tokens_are_counted_unpriced_never_priced_at_zero() -> None:
    table = PriceTable(AT_MS)
    estimate = Estimate()
    known = Tokens(1000, 100, 500, 300)
    estimate.add(Sums(messages=2, tokens=known), table, "claude-sonnet-4-5")
    estimate.add(Sums(messages=3, tokens=Tokens(300, 30)), table, "mystery-model-9")
    estimate.add(Sums(messages=1, tokens=Tokens(7, 3)), table, "")
    assert (estimate.messages, estimate.unpriced_messages, estimate.unpriced_tokens) == (2, 4, 340)
    assert estimate.cost == genai_price(known, "claude-sonnet-4-5")


def test_the_price_table_names_its_pinned_version() -> None:
    assert PRICE_TABLE == "genai-prices 0.2.3" == f"genai-prices {genai_prices.__version__}"
