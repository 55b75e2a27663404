import type { Observation } from '../observe/observation.js';
import type { Timers } from '../timers.js';
import type { ChargeAnswer, ChargeStage } from './charge-path.js';

/**
 * Observation as the outermost stage of a charge path: the observers hear every answer to a request's
 * charge, with the time from the call to its answer when the store answered it (not for a cached
 * denial, a decision of the failure policy or units from a quota lease), measured on `timers`. A charge
 * its group never asked is no decision of this limit: they do not hear it.
 */
export function observationStage(observation: Observation, timers: Timers): ChargeStage {
  return (charge, next) => {
    const startedAt = timers.now();
    const answer = next(charge);
    const told = (a: ChargeAnswer): ChargeAnswer => {
      if (a.took === 'not-asked') return a;
      const fromStore = a.decision.reason === undefined && a.took !== 'leased';
      observation.decision(a, charge.cost, fromStore ? timers.now() - startedAt : undefined, charge.key);
      return a;
    };
    return answer instanceof Promise ? answer.then(told) : told(answer);
  };
}
