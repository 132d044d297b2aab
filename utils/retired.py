"""Stand-ins for names that `utils` no longer holds because they answer an exercise.

The first code cell of lectures 5, 7, 8 and 9 still imports them: that cell also prints the GPU the lecture's stored
figures were measured on, and it keeps its code until the next run on a GPU, so that its stored output stays the output
of its code. Until then each old name imports fine and, if called, says which exercise asks for it. The lectures no
longer call them.
"""
from __future__ import annotations

from typing import Callable, NoReturn


def retired(name: str, exercise: str) -> Callable[..., NoReturn]:
    """A function called `name` that raises NotImplementedError pointing to `exercise` (e.g. "exercise 8, task 2")."""

    def stand_in(*args: object, **kwargs: object) -> NoReturn:
        raise NotImplementedError(f"{name} is not part of utils: writing it is {exercise} (release/).")

    stand_in.__name__ = stand_in.__qualname__ = name
    stand_in.__doc__ = f"Not in utils: writing {name} is {exercise}."
    return stand_in
