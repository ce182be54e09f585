"""Sessions in `storefront`, a TypeScript shop (React on Vite, an Express server for server-side rendering,
vitest and Playwright): a server that would not start with a RangeError, a flaky checkout test, a login
redirect that loses its query string, and the review of a pull request."""

from __future__ import annotations

from quarry.cli.sample_archive.outputs import ripgrep, unified_diff, vitest_run
from quarry.cli.sample_archive.repos import STOREFRONT
from quarry.cli.sample_archive.script import Builder, Scenario

STACK = """RangeError: Maximum call stack size exceeded
    at loadConfig (/home/sam/code/storefront/server/config.ts:21:15)
    at loadConfig (/home/sam/code/storefront/server/config.ts:24:20)
    at loadConfig (/home/sam/code/storefront/server/config.ts:24:20)
    at loadConfig (/home/sam/code/storefront/server/config.ts:24:20)
    at loadConfig (/home/sam/code/storefront/server/config.ts:24:20)
    at loadConfig (/home/sam/code/storefront/server/config.ts:24:20)
    at loadConfig (/home/sam/code/storefront/server/config.ts:24:20)
    at loadConfig (/home/sam/code/storefront/server/config.ts:24:20)
    at loadConfig (/home/sam/code/storefront/server/config.ts:24:20)
    at loadConfig (/home/sam/code/storefront/server/config.ts:24:20)

Node.js v22.11.0"""
LOADER_OLD = """export function loadConfig(name: string): Config {
  const raw = JSON.parse(readFileSync(join(CONFIG_DIR, `${name}.json`), "utf8"));
  if (!raw.extends) return raw;
  return deepMerge(loadConfig(raw.extends), raw);
}"""
LOADER_NEW = """export function loadConfig(name: string, dir = CONFIG_DIR, seen: string[] = []): Config {
  if (seen.includes(name)) {
    throw new Error(`config ${[...seen, name].join(" -> ")}: a config cannot extend itself`);
  }
  const raw = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8"));
  if (!raw.extends) return raw;
  return deepMerge(loadConfig(raw.extends, dir, [...seen, name]), raw);
}"""


def server_range_error(b: Builder) -> None:
    b.prompt(
        b.rng.choice(
            (
                "The server would not start after I pulled main: `npm run dev` dies right away with RangeError: "
                "Maximum call stack size exceeded. Can you take a look?",
                "npm run dev crashes on startup since this morning's pull, RangeError: Maximum call stack size "
                "exceeded. The server would not start at all.",
            )
        )
    )
    dev = "\n> storefront@0.14.0 dev\n> tsx watch server/index.ts\n\n" + STACK
    b.bash("npm run dev", "Start the dev server", dev, exit_code=1, seconds=3)
    b.read("server/config.ts", LOADER_OLD, offset=18)
    b.bash(
        "git log --oneline -3 -- config/ && grep -n extends config/*.json",
        "Recent config changes",
        "a41c9e2 config: staging inherits the default timeouts\n3b7d015 config: move feature flags to JSON\n"
        'config/default.json:2:  "extends": "staging",\nconfig/staging.json:2:  "extends": "default",',
        seconds=0.4,
    )
    b.say(
        "Found the loop: a41c9e2 made `staging` extend `default`, and `default.json` already extended "
        "`staging` (left over from the move to JSON), so `loadConfig` recursed until the stack ran out. I'll "
        "remove the stray `extends` and make the loader report a cycle instead of overflowing."
    )
    b.edit("config/default.json", '  "extends": "staging",\n', "")
    b.edit("server/config.ts", LOADER_OLD, LOADER_NEW)
    b.write(
        "server/config.test.ts",
        'import { describe, expect, it } from "vitest";\nimport { loadConfig } from "./config";\n\n'
        'describe("loadConfig", () => {\n  it("merges a config over the one it extends", () => {\n'
        '    expect(loadConfig("staging").timeouts.checkoutMs).toBe(8000);\n  });\n\n'
        '  it("names the cycle when configs extend each other", () => {\n'
        '    expect(() => loadConfig("cycle-a", "test/fixtures/config")).toThrow(\n'
        '      "config cycle-a -> cycle-b -> cycle-a: a config cannot extend itself",\n    );\n  });\n});\n',
    )
    files = (("server/config.test.ts", 2), ("src/cart/cart.test.ts", 14), ("src/lib/money.test.ts", 9))
    b.bash("npx vitest run", "Run the unit tests", vitest_run(files, seconds=1.42), seconds=3)
    b.bash(
        "timeout 10 npm run dev",
        "Start the dev server again",
        "\n> storefront@0.14.0 dev\n> tsx watch server/index.ts\n\n[server] config: staging\n"
        "[server] listening on http://localhost:5173",
        exit_code=124,
        seconds=10,
    )
    b.say(
        "The server starts again. The RangeError was infinite recursion in `loadConfig`: `default.json` "
        "extended `staging` and `staging.json` extended `default`. I removed the stray `extends` from "
        "`config/default.json`, and `loadConfig` now tracks the chain it followed, so a cycle fails with "
        "`config default -> staging -> default: a config cannot extend itself` instead of a stack overflow. "
        "New tests in `server/config.test.ts`; all tests pass. (The exit 124 above is my `timeout 10`.)"
    )


def flaky_checkout(b: Builder) -> None:
    b.prompt(
        "checkout.spec.ts is flaky in CI, about once a day: `Timeout 30000ms exceeded while waiting for "
        'response "/api/cart"`. Can you make it reliable?'
    )
    b.read(
        "e2e/checkout.spec.ts",
        'test("adds to cart and checks out", async ({ page }) => {\n  await page.goto("/products/trail-mug");\n'
        '  await page.getByRole("button", { name: "Add to cart" }).click();\n'
        '  await page.waitForResponse("**/api/cart");\n'
        '  await expect(page.getByTestId("cart-count")).toHaveText("1");',
        offset=8,
    )
    b.think(
        "Race in the test\nThe click fires the request; waitForResponse is registered after the click resolves. "
        "When the API answers fast (a warm CI cache) the response arrives before the listener exists, and the "
        "wait runs into the 30 s timeout."
    )
    b.edit(
        "e2e/checkout.spec.ts",
        '  await page.getByRole("button", { name: "Add to cart" }).click();\n'
        '  await page.waitForResponse("**/api/cart");',
        '  const cartUpdated = page.waitForResponse("**/api/cart");\n'
        '  await page.getByRole("button", { name: "Add to cart" }).click();\n  await cartUpdated;',
    )
    b.bash(
        "npx playwright test e2e/checkout.spec.ts --repeat-each 40 --workers 4",
        "",
        "Running 40 tests using 4 workers\n\n  40 passed (1.6m)",
        seconds=96,
    )
    b.say(
        "The timeout was a race in the test, not a slow API. `waitForResponse` was called after the click, so "
        "when `/api/cart` answered quickly the response had already arrived before anyone waited for it, and "
        "the test waited out the full 30 s. The wait is now registered before the click and awaited after it. "
        "40 repetitions on 4 workers pass; before, about one in twenty failed locally with a warm server."
    )


LOGIN_FAILURE = (
    "src/auth/login.test.ts > login > redirects back to the page you came from\n"
    "AssertionError: expected '/cart' to be '/cart?step=2' // Object.is equality\n\n"
    "- Expected\n+ Received\n\n- /cart?step=2\n+ /cart\n\n ❯ src/auth/login.test.ts:31:38"
)


def login_redirect(b: Builder) -> None:
    b.prompt(
        "On fix/login: after logging in we should land back where we were, query string included. "
        "login.test.ts has a failing test for it, make it pass."
    )
    files = (("src/auth/login.test.ts", 6), ("src/cart/cart.test.ts", 14), ("src/lib/money.test.ts", 9))
    b.bash("npx vitest run src/auth", "", vitest_run(files[:1], LOGIN_FAILURE, seconds=0.9), exit_code=1)
    b.read(
        "src/auth/returnTo.ts",
        "export function returnTo(from: URL): string {\n  // only ever redirect within the shop\n"
        '  return from.origin === window.location.origin ? from.pathname : "/";\n}',
        offset=1,
    )
    guessed = "  return from.pathname;"
    b.edit(
        "src/auth/returnTo.ts",
        guessed,
        "  return from.pathname + from.search + from.hash;",
        refused=f"String to replace not found in file.\nString: {guessed}",
    )
    b.say("The return is a ternary on the origin; editing that line as it is:")
    b.edit(
        "src/auth/returnTo.ts",
        '  return from.origin === window.location.origin ? from.pathname : "/";',
        '  return from.origin === window.location.origin ? from.pathname + from.search + from.hash : "/";',
    )
    b.bash("npx vitest run", "", vitest_run(files, seconds=1.3), seconds=3)
    b.say(
        "`returnTo` kept only `pathname`, dropping `?step=2`. It now returns path, query and hash (still only "
        "for same-origin URLs, so it can't be turned into an open redirect). All tests pass."
    )


PERSIST_DIFF = unified_diff(
    "src/cart/useCart.ts",
    (
        (
            12,
            "  const [items, setItems] = useState<CartItem[]>([]);",
            "  const [items, setItems] = useState<CartItem[]>(\n"
            '    () => JSON.parse(localStorage.getItem("cart") ?? "[]"),\n  );\n'
            '  useEffect(() => localStorage.setItem("cart", JSON.stringify(items)), [items]);',
        ),
    ),
)


def _ssr_callers(b: Builder) -> str:
    matches = (
        ("src/cart/CartBadge.tsx", 4, "  const { items } = useCart();"),
        ("src/pages/ProductPage.tsx", 19, "  const { add } = useCart();"),
        ("server/render.tsx", 27, "  const html = renderToString(<App url={req.url} />);"),
    )
    b.grep("useCart\\(|renderToString", "src server", ripgrep(matches))
    return (
        "`useCart` runs during server rendering: `server/render.tsx:27` renders `<App>` with `renderToString`, "
        "and `CartBadge` (in the header, on every page) and `ProductPage` call `useCart()`. A `useState` "
        "initializer runs on the server too, so `localStorage` there is a ReferenceError."
    )


def review_persist_cart(b: Builder) -> None:
    b.prompt("can you review #214 (persist the cart in localStorage)? just tell me, don't comment on the PR")
    b.bash("gh pr diff 214", "The diff", PERSIST_DIFF, seconds=1)
    b.delegate(
        "Explore",
        "Check where useCart runs",
        "In storefront, does useCart (src/cart/useCart.ts) ever run during server-side rendering? List the "
        "components that call it and whether the server renders them. Report only.",
        _ssr_callers,
        model="claude-haiku-4-5",
    )
    b.say(
        "#214 would break server rendering. The `useState` initializer reads `localStorage`, and initializers "
        "run on the server as well: `server/render.tsx` renders the whole app and `CartBadge` (header, every "
        "page) calls `useCart()`, so every page would 500 with `ReferenceError: localStorage is not defined`.\n\n"
        "Suggestions for the author:\n"
        "1. Start from `[]` and load the saved cart in a `useEffect` (effects only run in the browser), or "
        'guard with `typeof window !== "undefined"`.\n'
        "2. `JSON.parse` of a corrupted or old-format value throws; wrap it and fall back to `[]`.\n"
        "3. A test that renders `<CartBadge>` with `renderToString` would have caught this."
    )


SCENARIOS = (
    Scenario("Dev server would not start: RangeError", STOREFRONT, "main", server_range_error),
    Scenario("Flaky checkout e2e test times out", STOREFRONT, "fix/checkout-e2e", flaky_checkout),
    Scenario("Login loses the return URL's query string", STOREFRONT, "fix/login", login_redirect),
    Scenario("Review PR #214: persist the cart", STOREFRONT, "main", review_persist_cart, delegates=True),
)
