/** Spec, Filtering rule 3: the criteria operators (range operators apply to DateTime, Integer and Double). */
export type Operator = 'Equal' | 'GreaterThan' | 'GreaterThanOrEqual' | 'LessThan' | 'LessThanOrEqual' | 'Between' | 'BetweenInclusive';
export const OPERATORS: readonly Operator[] = ['Equal', 'GreaterThan', 'GreaterThanOrEqual', 'LessThan', 'LessThanOrEqual', 'Between', 'BetweenInclusive'];
