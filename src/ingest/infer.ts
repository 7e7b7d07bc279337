import type { PropertyDataType } from '../types.js';
import { addError } from './schema.js';
import type { IngestErrors, IngestValue } from './types.js';
import { valueKind, type ValueKind } from './values.js';

/** One value of a property somewhere in the request, as inference sees it. */
export interface Observation {
  /** Request path of the value, e.g. `entries[2].properties[0].value`. */
  valuePath: string;
  value: IngestValue;
  hasLanguage: boolean;
}

/** Shapes that may share one property: integers and decimals promote to Decimal (spec rule 7). */
type Family = 'string' | 'list' | 'boolean' | 'number';

function familyOf(kind: Exclude<ValueKind, 'null'>): Family {
  return kind === 'integer' || kind === 'decimal' ? 'number' : kind;
}

const FAMILY_WORDS: Record<Family, string> = {
  string: 'a string',
  list: 'an array of strings',
  boolean: 'a boolean',
  number: 'a number',
};

/**
 * Spec rule 7: the type of a property with no configured type, from ALL its values in the request.
 * Strings give Text (LocalizedText when the first one carries a language), string arrays List
 * (LocalizedList), booleans Boolean, whole numbers Integer, fractional numbers Decimal, both kinds
 * of numbers Decimal. Any other mix, or only nulls, rejects the request; errors land on the values
 * that disagree with the first non-null one. A string is never inferred as Timestamp. Whether each
 * value's `language` fits the inferred type is checked afterwards like for a configured type.
 */
export function inferPropertyType(propertyId: string, observations: readonly Observation[], errors: IngestErrors): PropertyDataType | undefined {
  const first = observations.find((o) => o.value !== null);
  if (first === undefined) {
    for (const o of observations) {
      addError(
        errors,
        o.valuePath,
        `the type of property '${propertyId}' cannot be inferred from null values only: send a value or configure the property type first`,
      );
    }
    return undefined;
  }
  const family = familyOf(valueKind(first.value) as Exclude<ValueKind, 'null'>);
  let sawDecimal = false;
  let consistent = true;
  for (const o of observations) {
    const kind = valueKind(o.value);
    if (kind === 'null') continue;
    if (kind === 'decimal') sawDecimal = true;
    if (familyOf(kind) !== family) {
      consistent = false;
      addError(
        errors,
        o.valuePath,
        `property '${propertyId}' has incompatible value shapes in this request: ${FAMILY_WORDS[familyOf(kind)]} here, ${FAMILY_WORDS[family]} at ${first.valuePath}`,
      );
    }
  }
  if (!consistent) return undefined;
  switch (family) {
    case 'string':
      return first.hasLanguage ? 'LocalizedText' : 'Text';
    case 'list':
      return first.hasLanguage ? 'LocalizedList' : 'List';
    case 'boolean':
      return 'Boolean';
    case 'number':
      return sawDecimal ? 'Decimal' : 'Integer';
  }
}
