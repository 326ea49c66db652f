"""The contracts every layer above speaks: tasks, completions, verdicts, scores, the
``Verifier`` base, reward specs, the loss record, errors that are the user's."""
