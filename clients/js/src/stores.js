// @ts-check
/** Where a client keeps its feed position (cursor and change version) between runs. */

/**
 * A place for small JSON values by key. Any object with these two methods will do (a file, a
 * database row, `localStorage` wrapped in promises).
 * @typedef {object} KeyValueStore
 * @property {(key: string) => Promise<any>} get the value saved under `key`, or `undefined`
 * @property {(key: string, value: any) => Promise<void>} set saves `value` (JSON-compatible) under `key`
 */

/** Keeps values in memory: the position is lost when the process ends (a full resync then). */
export class MemoryStore {
  constructor() {
    /** @type {Map<string, any>} */
    this.values = new Map();
  }

  /** @param {string} key */
  async get(key) {
    const value = this.values.get(key);
    return value === undefined ? undefined : structuredClone(value);
  }

  /**
   * @param {string} key
   * @param {any} value
   */
  async set(key, value) {
    this.values.set(key, structuredClone(value));
  }
}

/** Keeps values in IndexedDB, shared by a page and its service worker (one origin). */
export class IndexedDBStore {
  /**
   * @param {string} [database] the IndexedDB database's name
   * @param {string} [objectStore] the object store's name inside it
   */
  constructor(database = 'notification-hub', objectStore = 'state') {
    this.database = database;
    this.objectStore = objectStore;
    /** @type {Promise<IDBDatabase> | undefined} */
    this.opened = undefined;
  }

  /**
   * Opens the database, adding the object store (with a version upgrade) when the database exists
   * without it: several stores may share one database.
   * @returns {Promise<IDBDatabase>}
   */
  open() {
    /** @param {number | undefined} version */
    const attempt = (version) =>
      /** @type {Promise<IDBDatabase>} */ (
        new Promise((resolve, reject) => {
          const request = indexedDB.open(this.database, version);
          request.onupgradeneeded = () => {
            if (!request.result.objectStoreNames.contains(this.objectStore)) {
              request.result.createObjectStore(this.objectStore);
            }
          };
          request.onsuccess = () => {
            // Another context upgrading the database (adding its store) must not wait for this one.
            request.result.onversionchange = () => {
              request.result.close();
              this.opened = undefined;
            };
            resolve(request.result);
          };
          request.onerror = () => reject(request.error);
        })
      );
    this.opened ??= attempt(undefined).then((db) => {
      if (db.objectStoreNames.contains(this.objectStore)) return db;
      const next = db.version + 1;
      db.close();
      return attempt(next);
    });
    return this.opened;
  }

  /** @param {string} key */
  async get(key) {
    const db = await this.open();
    return new Promise((resolve, reject) => {
      const request = db.transaction(this.objectStore).objectStore(this.objectStore).get(key);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
  }

  /**
   * @param {string} key
   * @param {any} value
   * @returns {Promise<void>}
   */
  async set(key, value) {
    const db = await this.open();
    return new Promise((resolve, reject) => {
      const transaction = db.transaction(this.objectStore, 'readwrite');
      transaction.objectStore(this.objectStore).put(value, key);
      transaction.oncomplete = () => resolve();
      transaction.onerror = () => reject(transaction.error);
    });
  }
}

/** IndexedDB where there is one (browsers, service workers), else memory.
 * @returns {KeyValueStore} */
export function defaultStore() {
  return typeof indexedDB === 'undefined' ? new MemoryStore() : new IndexedDBStore();
}
