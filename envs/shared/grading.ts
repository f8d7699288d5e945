/**
 * What a code grader's evaluation is, js-code's harness and py-code's alike: how many of the tests
 * passed, how the grading ended, what went wrong and the first failures. One list of status names
 * for both (each grader ends with the ones that apply to it): they are what the metrics and the
 * episode state say, so a trainer reads the same word for the same outcome in either.
 */
export type GradeStatus =
  | "ok"
  /** The reply has no code. */
  | "no_code"
  /** JavaScript that does not load (a syntax error, a throw while loading, no function of the name). */
  | "load_error"
  /** Python that does not compile or does not load. */
  | "compile_error"
  | "timeout"
  | "memory"
  /** The sandbox could not run the code: not the candidate's fault, reported as an error. */
  | "sandbox_error";

export interface Graded<Status extends GradeStatus, Failure> {
  passed: number;
  total: number;
  status: Status;
  /** What went wrong, when status is not "ok" (or some tests failed). */
  message: string | null;
  /** The first few failed tests. */
  failures: Failure[];
}
