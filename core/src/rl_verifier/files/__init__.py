"""Files in and out: JSON Lines with errors that name the line, atomic writes, the
files of one ``rlv verify`` run, common eval formats."""
