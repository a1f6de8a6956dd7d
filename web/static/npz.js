// A reader for NumPy's .npz files: a zip archive of .npy arrays, stored or deflated
// (np.savez / np.savez_compressed). Enough of zip and .npy to read what the engines write:
// little-endian numbers and booleans, C or Fortran order; string arrays are skipped.

const EOCD = 0x06054b50, CENTRAL = 0x02014b50, LOCAL = 0x04034b50;

// readNPZ returns a Map from array name (without .npy) to {shape, data} for an ArrayBuffer.
export async function readNPZ(buffer) {
  const view = new DataView(buffer);
  const arrays = new Map();
  for (const entry of centralDirectory(view)) {
    if (!entry.name.endsWith(".npy")) continue;
    const raw = await entryBytes(buffer, view, entry);
    const array = parseNPY(raw);
    if (array) arrays.set(entry.name.slice(0, -4), array);
  }
  return arrays;
}

function centralDirectory(view) {
  let end = -1;
  for (let i = view.byteLength - 22; i >= Math.max(0, view.byteLength - 65557); i--) {
    if (view.getUint32(i, true) === EOCD) { end = i; break; }
  }
  if (end < 0) throw new Error("not a zip file (no end of central directory)");
  const count = view.getUint16(end + 10, true);
  let at = view.getUint32(end + 16, true);
  const entries = [];
  for (let n = 0; n < count; n++) {
    if (view.getUint32(at, true) !== CENTRAL) throw new Error("corrupt zip central directory");
    const entry = {
      method: view.getUint16(at + 10, true),
      compressed: view.getUint32(at + 20, true),
      size: view.getUint32(at + 24, true),
      offset: view.getUint32(at + 42, true),
    };
    const nameLen = view.getUint16(at + 28, true), extraLen = view.getUint16(at + 30, true), commentLen = view.getUint16(at + 32, true);
    entry.name = new TextDecoder().decode(new Uint8Array(view.buffer, at + 46, nameLen));
    readZip64(view, at + 46 + nameLen, extraLen, entry);
    entries.push(entry);
    at += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

// readZip64 takes the 64-bit sizes and offset of the zip64 extra field, in the order the
// format lists them, for those of the 32-bit fields that are saturated.
function readZip64(view, at, length, entry) {
  const stop = at + length;
  while (at + 4 <= stop) {
    const id = view.getUint16(at, true), size = view.getUint16(at + 2, true);
    if (id === 1) {
      let p = at + 4;
      for (const key of ["size", "compressed", "offset"]) {
        if (entry[key] === 0xffffffff) { entry[key] = Number(view.getBigUint64(p, true)); p += 8; }
      }
    }
    at += 4 + size;
  }
}

async function entryBytes(buffer, view, entry) {
  if (view.getUint32(entry.offset, true) !== LOCAL) throw new Error("corrupt zip entry " + entry.name);
  const start = entry.offset + 30 + view.getUint16(entry.offset + 26, true) + view.getUint16(entry.offset + 28, true);
  const data = new Uint8Array(buffer, start, entry.compressed);
  if (entry.method === 0) return data.slice();
  if (entry.method !== 8) throw new Error(`zip method ${entry.method} of ${entry.name} is not supported`);
  const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

const TYPES = { f2: null, f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array, b1: Uint8Array,
  i2: Int16Array, u2: Uint16Array, i4: Int32Array, u4: Uint32Array, i8: BigInt64Array, u8: BigUint64Array };

// parseNPY reads one .npy file into {shape, data}, data a flat array in C order; null for
// dtypes this reader does not turn into numbers (strings, objects).
export function parseNPY(bytes) {
  if (bytes[0] !== 0x93 || String.fromCharCode(...bytes.slice(1, 6)) !== "NUMPY") throw new Error("not a .npy array");
  const major = bytes[6];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const headerStart = major === 1 ? 10 : 12;
  const header = new TextDecoder().decode(bytes.subarray(headerStart, headerStart + headerLen));
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const fortran = /'fortran_order':\s*True/.test(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(",").map(s => s.trim()).filter(Boolean).map(Number);
  const kind = descr.slice(1);
  if (!(kind in TYPES) || descr[0] === ">") return null;
  const count = shape.reduce((a, b) => a * b, 1);
  const body = bytes.slice(headerStart + headerLen); // a copy, aligned for typed arrays
  let data;
  if (kind === "f2") data = halfToFloat(new Uint16Array(body.buffer, 0, count));
  else if (kind === "i8" || kind === "u8") data = Float64Array.from(new TYPES[kind](body.buffer, 0, count), Number);
  else data = new TYPES[kind](body.buffer, 0, count);
  if (fortran && shape.length > 1) data = toCOrder(data, shape);
  return { shape, data };
}

function halfToFloat(half) {
  const out = new Float32Array(half.length);
  for (let i = 0; i < half.length; i++) {
    const h = half[i], sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    out[i] = exp === 0 ? sign * 2 ** -14 * (frac / 1024)
      : exp === 31 ? (frac ? NaN : sign * Infinity)
      : sign * 2 ** (exp - 15) * (1 + frac / 1024);
  }
  return out;
}

function toCOrder(data, shape) {
  if (shape.length !== 2) throw new Error("Fortran-order arrays of more than two axes are not supported");
  const [rows, cols] = shape, out = new data.constructor(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[r * cols + c] = data[c * rows + r];
  return out;
}
