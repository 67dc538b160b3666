// wide_hlo.js - writes a profile whose Graph Viewer opens on a very wide
// neighbourhood, for graph_viewer.test.js (no checked-in large file).
//
//   writeWideProfile(file, n) writes `file` (an .xplane.pb): one XSpace
//   with a "/host:metadata" plane holding one HLO module "jit_wide" (as
//   the "Hlo Proto" stat of an event metadata, with its "program_id"):
//     p0 = parameter(0); neg.i = negate(p0) for i < n; out = tuple(neg.*)
//   The profile has no device ops, so the Graph Viewer opens on the root of
//   the entry computation (`out`), whose n operands are all drawn: a graph
//   of n + 2 nodes and 2n edges opened without any choice by the user.
//
// The protobuf wire format is written by hand (varints and length-delimited
// fields), enough for these messages.
const fs = require('fs');

function varint(v) {
  const out = [];
  let x = BigInt(v);
  if (x < 0n) x += 1n << 64n;
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x) b |= 0x80;
    out.push(b);
  } while (x);
  return Buffer.from(out);
}
const key = (field, wire) => varint((field << 3) | wire);
const int = (field, v) => Buffer.concat([key(field, 0), varint(v)]);
const bytes = (field, buf) => Buffer.concat([key(field, 2), varint(buf.length), buf]);
const str = (field, s) => bytes(field, Buffer.from(s, 'utf8'));
const msg = (field, parts) => bytes(field, Buffer.concat(parts));
const packed = (field, vs) => bytes(field, Buffer.concat(vs.map(varint)));

// ShapeProto f32[8]
const SHAPE = msg(3, [int(2, 11), packed(3, [8])]);

function instruction(name, opcode, id, operands, extra = []) {
  const parts = [str(1, name), str(2, opcode), SHAPE, int(35, id), ...extra];
  if (operands.length) parts.push(packed(36, operands));
  return msg(2, parts);   // HloComputationProto.instructions
}

function moduleBytes(n) {
  const ins = [instruction('p0', 'parameter', 1, [], [int(9, 0)])];
  const ids = [];
  for (let i = 0; i < n; i++) {
    ins.push(instruction(`neg.${i}`, 'negate', 2 + i, [1]));
    ids.push(2 + i);
  }
  const rootId = 2 + n;
  ins.push(instruction('out', 'tuple', rootId, ids));
  const comp = msg(3, [str(1, 'main'), ...ins, int(5, 10), int(6, rootId)]);
  const mod = Buffer.concat([str(1, 'jit_wide'), str(2, 'main'), comp, int(5, 1), int(6, 10)]);
  return Buffer.concat([msg(1, [mod])]);   // HloProto.hlo_module
}

function writeWideProfile(file, n) {
  const hlo = moduleBytes(n);
  const STAT_HLO = 1, STAT_PID = 2, EVENT = 1;
  const xstat = (meta, valueField, v) => Buffer.concat([int(1, meta),
    valueField === 6 ? bytes(6, v) : int(valueField, v)]);
  const eventMeta = Buffer.concat([int(1, EVENT), str(2, 'jit_wide'),
    msg(5, [xstat(STAT_HLO, 6, hlo)]), msg(5, [xstat(STAT_PID, 4, 1)])]);
  const mapEntry = (field, k, value) => msg(field, [int(1, k), msg(2, [value])]);
  const plane = Buffer.concat([int(1, 1), str(2, '/host:metadata'),
    mapEntry(4, EVENT, eventMeta),
    mapEntry(5, STAT_HLO, Buffer.concat([int(1, STAT_HLO), str(2, 'Hlo Proto')])),
    mapEntry(5, STAT_PID, Buffer.concat([int(1, STAT_PID), str(2, 'program_id')]))]);
  fs.writeFileSync(file, msg(1, [plane]));   // XSpace.planes
}

module.exports = { writeWideProfile };
