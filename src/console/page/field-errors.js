// @ts-check
/**
 * Validation errors shown next to the fields they are about. The server (and the emulator behind
 * it) keys errors by request path (`entries[0].properties[1].value`); a form marks each field with
 * `data-field` set to its path. A message whose path no field claims is shown at the top, with it.
 */
import { h } from './dom.js';

/** @param {HTMLElement} form */
export function fieldErrors(form) {
  const summary = h('ul', { class: 'form-errors', hidden: true });
  form.prepend(summary);

  return {
    clear() {
      for (const el of form.querySelectorAll('.field-error')) el.remove();
      for (const el of form.querySelectorAll('[data-invalid]')) el.removeAttribute('data-invalid');
      summary.replaceChildren();
      summary.hidden = true;
    },

    /** @param {{ message: string, errors: Record<string, string[]> }} problem */
    show(problem) {
      const unplaced = [];
      for (const [path, messages] of Object.entries(problem.errors)) {
        const field = closestField(form, path);
        if (field === undefined) {
          unplaced.push(`${path}: ${messages.join(' ')}`);
          continue;
        }
        field.dataset.invalid = '';
        field.append(h('span', { class: 'field-error', dataset: { errorFor: path } }, messages.join(' ')));
      }
      const lines = Object.keys(problem.errors).length === 0 || unplaced.length > 0 ? [problem.message, ...unplaced] : [problem.message];
      summary.replaceChildren(...lines.map((line) => h('li', {}, line)));
      summary.hidden = false;
    },
  };
}

/**
 * The field of `path`, or of its nearest parent path that has one (`entries[0].properties[1]` has
 * no field of its own: its row does). @param {HTMLElement} form @param {string} path
 */
function closestField(form, path) {
  for (let p = path; p !== ''; p = parentPath(p)) {
    const field = /** @type {HTMLElement | null} */ (form.querySelector(`[data-field="${CSS.escape(p)}"]`));
    if (field !== null) return field;
  }
  return undefined;
}

/** `a.b[2].c` -> `a.b[2]` -> `a.b` -> `a` -> ''. @param {string} path */
function parentPath(path) {
  const cut = Math.max(path.lastIndexOf('.'), path.lastIndexOf('['));
  return cut <= 0 ? '' : path.slice(0, cut);
}
