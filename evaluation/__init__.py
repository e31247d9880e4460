"""`adr evaluate`: the paper's §10 protocol run against Elo, dynamic-K Elo, Glicko-2 and TrueSkill.

Every system sits behind one small interface (:class:`RatingSystem`): predict P(a kills b), then
update. The synthetic stream, the metrics and the report are plain functions over those systems.

Exceptions: `EvaluationError` (root and only one).
"""

from evaluation._errors import EvaluationError
from evaluation._systems import RatingSystem

__all__ = ["EvaluationError", "RatingSystem"]
