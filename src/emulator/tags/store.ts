import { randomUUID } from 'node:crypto';

export type ManagedTagType = 'Text' | 'LocalizedText';

/** Spec: Resources, Managed tag. `parentId` is null for a root tag (and after its parent is deleted). */
export interface ManagedTag {
  id: string;
  displayName: string;
  type: ManagedTagType;
  parentId: string | null;
  createdAt: string;
  lastModifiedAt: string;
  createdBy: string;
  updatedBy: string;
}

export interface CardDefinition {
  id: string;
  managedTagIds: string[];
}

export interface NewManagedTag {
  id?: string;
  displayName: string;
  type: ManagedTagType;
  parentId?: string | null;
  createdAt?: string;
  lastModifiedAt?: string;
}

export type DeleteOutcome = 'deleted' | 'absent' | { referencedBy: string };

/** The managed tags and card definitions of one tenant. Ids are kept lowercase (UUIDs compare case-insensitively). */
export class TenantTags {
  readonly tags = new Map<string, ManagedTag>();
  readonly cards = new Map<string, CardDefinition>();

  constructor(private readonly now: () => Date) {}

  add(input: NewManagedTag): ManagedTag {
    const at = this.now().toISOString();
    // The emulator has no users: a seeded tag is "made" by a fixed system identity per tag.
    const author = randomUUID();
    const tag: ManagedTag = {
      id: (input.id ?? randomUUID()).toLowerCase(),
      displayName: input.displayName,
      type: input.type,
      parentId: input.parentId ? input.parentId.toLowerCase() : null,
      createdAt: input.createdAt ?? at,
      lastModifiedAt: input.lastModifiedAt ?? input.createdAt ?? at,
      createdBy: author,
      updatedBy: author,
    };
    this.tags.set(tag.id, tag);
    return tag;
  }

  get(id: string): ManagedTag | undefined {
    return this.tags.get(id.toLowerCase());
  }

  addCard(input: { id?: string; managedTagIds: string[] }): CardDefinition {
    const card: CardDefinition = {
      id: (input.id ?? randomUUID()).toLowerCase(),
      managedTagIds: input.managedTagIds.map((t) => t.toLowerCase()),
    };
    this.cards.set(card.id, card);
    return card;
  }

  /** Spec: 409 while a card definition references the tag; child lists are detached; 204 when already absent. */
  delete(id: string): DeleteOutcome {
    const key = id.toLowerCase();
    if (!this.tags.has(key)) return 'absent';
    for (const card of this.cards.values()) {
      if (card.managedTagIds.includes(key)) return { referencedBy: card.id };
    }
    this.tags.delete(key);
    const at = this.now().toISOString();
    for (const child of this.tags.values()) {
      if (child.parentId === key) {
        child.parentId = null;
        child.lastModifiedAt = at;
      }
    }
    return 'deleted';
  }

  /** Every tag, ordered by ID (spec: "Results are ordered by ID"). */
  sorted(): ManagedTag[] {
    return [...this.tags.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
}

export class ManagedTagStore {
  readonly #tenants = new Map<string, TenantTags>();

  constructor(private readonly now: () => Date = () => new Date()) {}

  tenant(tenant: string): TenantTags {
    let t = this.#tenants.get(tenant);
    if (!t) {
      t = new TenantTags(this.now);
      this.#tenants.set(tenant, t);
    }
    return t;
  }
}
