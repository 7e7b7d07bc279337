/**
 * A decoder of OTLP/HTTP protobuf trace requests (opentelemetry-proto, collector/trace/v1), written
 * from the .proto field numbers: the test receiver decodes what the real exporter sends without a
 * protobuf library. Unknown fields are skipped, as protobuf requires.
 */

type Field = { no: number; wire: number; value: bigint | Uint8Array };

function* fields(buf: Uint8Array): Generator<Field> {
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[pos++];
      if (byte === undefined) throw new Error('truncated varint');
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    const wire = key & 7;
    if (wire === 0) yield { no, wire, value: varint() };
    else if (wire === 1) {
      yield { no, wire, value: buf.subarray(pos, pos + 8) };
      pos += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      yield { no, wire, value: buf.subarray(pos, pos + length) };
      pos += length;
    } else if (wire === 5) {
      yield { no, wire, value: buf.subarray(pos, pos + 4) };
      pos += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
}

const text = (value: Field['value']) => Buffer.from(value as Uint8Array).toString('utf8');
const hex = (value: Field['value']) => Buffer.from(value as Uint8Array).toString('hex');
const fixed64 = (value: Field['value']) => Buffer.from(value as Uint8Array).readBigUInt64LE(0);
const fixed32 = (value: Field['value']) => Buffer.from(value as Uint8Array).readUInt32LE(0);
const bytes = (value: Field['value']) => value as Uint8Array;

/** The JSON mapping's shape (what OTLP/JSON sends), so both encodings normalise alike. */
export type JsonAnyValue = Record<string, unknown>;

function anyValue(buf: Uint8Array): JsonAnyValue {
  for (const f of fields(buf)) {
    if (f.no === 1) return { stringValue: text(f.value) };
    if (f.no === 2) return { boolValue: f.value !== 0n };
    if (f.no === 3) return { intValue: BigInt.asIntN(64, f.value as bigint).toString() };
    if (f.no === 4) return { doubleValue: Buffer.from(bytes(f.value)).readDoubleLE(0) };
    if (f.no === 5) return { arrayValue: { values: [...fields(bytes(f.value))].filter((v) => v.no === 1).map((v) => anyValue(bytes(v.value))) } };
    if (f.no === 6) return { kvlistValue: { values: [...fields(bytes(f.value))].filter((v) => v.no === 1).map((v) => keyValue(bytes(v.value))) } };
    if (f.no === 7) return { bytesValue: Buffer.from(bytes(f.value)).toString('base64') };
  }
  return {};
}

function keyValue(buf: Uint8Array): { key: string; value: JsonAnyValue } {
  let key = '';
  let value: JsonAnyValue = {};
  for (const f of fields(buf)) {
    if (f.no === 1) key = text(f.value);
    else if (f.no === 2) value = anyValue(bytes(f.value));
  }
  return { key, value };
}

function repeatedKeyValues(buf: Uint8Array, no: number): { key: string; value: JsonAnyValue }[] {
  return [...fields(buf)].filter((f) => f.no === no).map((f) => keyValue(bytes(f.value)));
}

function span(buf: Uint8Array): Record<string, unknown> {
  const out: Record<string, unknown> = { attributes: [], events: [], links: [] };
  for (const f of fields(buf)) {
    switch (f.no) {
      case 1:
        out.traceId = hex(f.value);
        break;
      case 2:
        out.spanId = hex(f.value);
        break;
      case 3:
        out.traceState = text(f.value);
        break;
      case 4:
        out.parentSpanId = hex(f.value);
        break;
      case 5:
        out.name = text(f.value);
        break;
      case 6:
        out.kind = Number(f.value);
        break;
      case 7:
        out.startTimeUnixNano = fixed64(f.value).toString();
        break;
      case 8:
        out.endTimeUnixNano = fixed64(f.value).toString();
        break;
      case 9:
        (out.attributes as unknown[]).push(keyValue(bytes(f.value)));
        break;
      case 11: {
        const event: Record<string, unknown> = { attributes: [] };
        for (const e of fields(bytes(f.value))) {
          if (e.no === 1) event.timeUnixNano = fixed64(e.value).toString();
          else if (e.no === 2) event.name = text(e.value);
          else if (e.no === 3) (event.attributes as unknown[]).push(keyValue(bytes(e.value)));
        }
        (out.events as unknown[]).push(event);
        break;
      }
      case 13: {
        const link: Record<string, unknown> = { attributes: [] };
        for (const l of fields(bytes(f.value))) {
          if (l.no === 1) link.traceId = hex(l.value);
          else if (l.no === 2) link.spanId = hex(l.value);
          else if (l.no === 3) link.traceState = text(l.value);
          else if (l.no === 4) (link.attributes as unknown[]).push(keyValue(bytes(l.value)));
          else if (l.no === 6) link.flags = fixed32(l.value);
        }
        (out.links as unknown[]).push(link);
        break;
      }
      case 15: {
        const status: Record<string, unknown> = {};
        for (const s of fields(bytes(f.value))) {
          if (s.no === 2) status.message = text(s.value);
          else if (s.no === 3) status.code = Number(s.value);
        }
        out.status = status;
        break;
      }
      case 16:
        out.flags = fixed32(f.value);
        break;
      default:
        break;
    }
  }
  return out;
}

/** An ExportTraceServiceRequest as its OTLP/JSON equivalent. */
export function decodeTraceRequest(buf: Uint8Array): { resourceSpans: unknown[] } {
  const resourceSpans: unknown[] = [];
  for (const rs of fields(buf)) {
    if (rs.no !== 1) continue;
    const entry: Record<string, unknown> = { scopeSpans: [] };
    for (const f of fields(bytes(rs.value))) {
      if (f.no === 1) entry.resource = { attributes: repeatedKeyValues(bytes(f.value), 1) };
      else if (f.no === 2) {
        const scopeSpans: Record<string, unknown> = { spans: [] };
        for (const s of fields(bytes(f.value))) {
          if (s.no === 1) {
            const scope: Record<string, unknown> = {};
            for (const sc of fields(bytes(s.value))) {
              if (sc.no === 1) scope.name = text(sc.value);
              else if (sc.no === 2) scope.version = text(sc.value);
            }
            scopeSpans.scope = scope;
          } else if (s.no === 2) (scopeSpans.spans as unknown[]).push(span(bytes(s.value)));
        }
        (entry.scopeSpans as unknown[]).push(scopeSpans);
      }
    }
    resourceSpans.push(entry);
  }
  return { resourceSpans };
}
