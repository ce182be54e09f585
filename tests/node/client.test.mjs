// Quarry's gRPC API from Node, as a platform team's client would call it: stubs loaded from proto/ at run
// time with @grpc/proto-loader, calls made with @grpc/grpc-js. QUARRY_QUERY names the query node,
// QUARRY_PROTO the proto/ folder. Run by tests/node/test_node_client.py against a live cluster.
import assert from "node:assert/strict";
import path from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";

import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const protoRoot = process.env.QUARRY_PROTO;
const address = process.env.QUARRY_QUERY;

const definition = protoLoader.loadSync("quarry/v1/query.proto", {
  includeDirs: [protoRoot],
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const quarry = grpc.loadPackageDefinition(definition).quarry.v1;
const client = new quarry.QueryService(address, grpc.credentials.createInsecure());

function call(method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: Date.now() + 30_000 }, (error, response) =>
      error ? reject(error) : resolve(response),
    );
  });
}

// The typed detail of a failed call: google.rpc.Status in the grpc-status-details-bin trailer, its
// details an Any holding quarry.v1.ErrorDetail.
function errorDetail(error) {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) =>
    [protoRoot, path.join(here, "proto")].map((dir) => path.join(dir, target)).find((file) => {
      try {
        return protobuf.util.fs.statSync(file).isFile();
      } catch {
        return false;
      }
    }) ?? target;
  root.loadSync(["google/rpc/status.proto", "quarry/v1/errors.proto"], { keepCase: true });
  const [bytes] = error.metadata.get("grpc-status-details-bin");
  const status = root.lookupType("google.rpc.Status").decode(bytes);
  const any = status.details[0];
  assert.equal(any.type_url, "type.googleapis.com/quarry.v1.ErrorDetail");
  const detail = root.lookupType("quarry.v1.ErrorDetail").decode(any.value);
  return root.lookupType("quarry.v1.ErrorDetail").toObject(detail, { enums: String });
}

test("a search ranks sessions", async () => {
  const envelope = await call("Search", { query: "sqlite locking", limit: 5 });
  assert.ok(envelope.hits.length > 0);
  assert.match(envelope.hits[0].session.id, /^claude-code-session:/);
  assert.ok(envelope.hits[0].match.rank === 1);
});

test("a unit query returns rows", async () => {
  const envelope = await call("QueryUnits", { query: "messages where role:user", limit: 3 });
  assert.equal(envelope.rows.length, 3);
});

test("a paged walk visits every hit once", async () => {
  const everything = await call("Search", { query: "timeout", limit: 50 });
  const walked = [];
  let cursor = "";
  do {
    const page = await call("Search", { query: "timeout", limit: 1, cursor });
    walked.push(...page.hits.map((hit) => hit.session.id));
    cursor = page.nextCursor;
  } while (cursor);
  assert.deepEqual(walked, everything.hits.map((hit) => hit.session.id));
  assert.ok(walked.length > 1);
});

test("a failed call carries its typed detail", async () => {
  await assert.rejects(call("Search", { query: "sessions where (" }), (error) => {
    assert.equal(error.code, grpc.status.INVALID_ARGUMENT);
    const detail = errorDetail(error);
    assert.equal(detail.code, "INVALID_QUERY");
    assert.ok(detail.position.column > 0);
    return true;
  });
});
