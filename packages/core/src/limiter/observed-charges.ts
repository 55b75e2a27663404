import type { Observation } from '../observe/observation.js';
import type { Charge } from '../store/interface.js';
import type { Timers } from '../timers.js';
import type { ChargeAnswer, ChargeStage } from './charge-path.js';

/**
 * Observation as the outermost stage of a charge path, composed only when some observer hears
 * decisions: the observers hear every answer to a request's charge, with the time from the call to its
 * answer when the store answered it (not for a cached denial, a decision of the failure policy or
 * units from a quota lease), measured on `timers` only when one of them reads it
 * (`Observation.wantsDurations`, read when the path is composed). A charge its group never asked is no
 * decision of this limit: they do not hear it. A synchronous answer makes no closure (a function made
 * per call also pays the build's `keepNames` rename, a `defineProperty`).
 */
export function observationStage(observation: Observation, timers: Timers): ChargeStage {
  const clock = observation.wantsDurations ? timers : undefined;
  return (charge, next) => {
    const startedAt = clock === undefined ? 0 : clock.now();
    const answer = next(charge);
    if (answer instanceof Promise) return answer.then((a) => told(observation, clock, charge, a, startedAt));
    return told(observation, clock, charge, answer, startedAt);
  };
}

/** `observation` hears `answer` to `charge`, timed from `startedAt` on `clock` when the store answered it and `clock` is given. */
function told(
  observation: Observation,
  clock: Timers | undefined,
  charge: Charge,
  answer: ChargeAnswer,
  startedAt: number,
): ChargeAnswer {
  if (answer.took === 'not-asked') return answer;
  const fromStore = clock !== undefined && answer.decision.reason === undefined && answer.took !== 'leased';
  observation.decision(answer, charge.cost, fromStore ? clock.now() - startedAt : undefined, charge.key);
  return answer;
}
