import type { IncomingMessage } from 'node:http';

/**
 * The request-body cap as its readers meet it. Admission (http/intake.ts) decides it; the readers
 * of a body (the adapter's JSON reader, Yoga's through graphql/plugins/body-limit.ts) ask
 * `bodyWithin` as bytes come, and stop when told no.
 */

/** The one message of a body over the cap, whoever refuses it. */
export const TOO_LARGE_MESSAGE = 'Request body too large';

/** What admitted a request judges its body by as it is read (http/intake.ts). */
export interface BodyAdmission {
  /** Whether `read` bytes of the body are within the cap; false: the request is refused, stop reading. */
  within(read: number): boolean;
}

/** Where a request's admission sits on its node:http request while its body arrives. */
export const BODY_ADMISSION = Symbol('body admission');

type Admitted = IncomingMessage & { [BODY_ADMISSION]?: BodyAdmission };

/** Whether `read` bytes of `req`'s body may be kept: its admission's word, or yes when none judges it. */
export const bodyWithin = (req: IncomingMessage | undefined, read: number): boolean =>
  (req as Admitted | undefined)?.[BODY_ADMISSION]?.within(read) ?? true;
