"""Studies that are not product: the tiny-world learnability study (README.md beside this file). Nothing under
avjudge/ imports from here."""
