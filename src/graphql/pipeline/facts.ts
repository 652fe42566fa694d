import type { DocumentNode, OperationDefinitionNode } from 'graphql';
import { getOperationAST } from 'graphql';

/**
 * What plugins derive from an operation of a kept document, each worked out once (its label, its
 * price, its cache verdict…) and kept with the operation's record: the record lives as long as the
 * document does, with whatever holds it (the document cache's LRU, or a request still running).
 * The document cache (documents.ts) keeps a document by registering it here; any other document's
 * facts are worked out every time.
 */

/** An operation of a kept document, and the facts derived from it. */
export interface OperationRecord {
  readonly operation: OperationDefinitionNode;
  /** Facts other plugins derive from the operation, by their key. */
  readonly facts: Map<OperationFact<unknown>, unknown>;
}

interface DocumentRecord {
  readonly operations: Map<string, OperationRecord>;
  /** Makes an operation's record, on its first use. */
  make(operation: OperationDefinitionNode): OperationRecord;
}

const documents = new WeakMap<DocumentNode, DocumentRecord>();

/** An operation's key in its document's record: an absent name (null or undefined) means the document's only operation; "" names none. */
export const operationKey = (operationName: string | null | undefined): string =>
  operationName === null || operationName === undefined ? '\u0000' : operationName;

/** Keeps `document`'s operations' records from now on, each made by `make` on its first use. */
export function keepDocument<R extends OperationRecord>(
  document: DocumentNode,
  make: (operation: OperationDefinitionNode) => R,
): Map<string, R> {
  const operations = new Map<string, R>();
  documents.set(document, { operations: operations as Map<string, OperationRecord>, make });
  return operations;
}

/**
 * The record of an operation of a kept document (an evicted document keeps its record while the
 * request that holds it runs), made on first use; null for a document never kept, or an operation
 * the document does not hold.
 */
export function operationRecord(
  document: DocumentNode,
  operationName: string | null | undefined,
): OperationRecord | null {
  const kept = documents.get(document);
  if (!kept) return null;
  const key = operationKey(operationName);
  let record = kept.operations.get(key);
  if (!record) {
    const definition = getOperationAST(document, operationName);
    // Only operations the document holds get a record: a caller's operationName adds nothing.
    if (!definition) return null;
    record = kept.make(definition);
    kept.operations.set(key, record);
  }
  return record;
}

/**
 * A fact a plugin derives from an operation (its label, its cache verdict…): computed once per
 * operation of a kept document, every time for any other document. Each plugin makes its own fact,
 * so plugins share the prepared record without knowing of each other.
 */
export interface OperationFact<T> {
  of(document: DocumentNode, operationName: string | null | undefined, compute: () => T): T;
}

export function operationFact<T>(): OperationFact<T> {
  const fact: OperationFact<T> = {
    of(document, operationName, compute) {
      const operation = operationRecord(document, operationName);
      if (!operation) return compute();
      if (operation.facts.has(fact)) return operation.facts.get(fact) as T;
      const value = compute();
      operation.facts.set(fact, value);
      return value;
    },
  };
  return fact;
}
