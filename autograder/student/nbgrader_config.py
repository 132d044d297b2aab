"""nbgrader's settings for the student edition. `nbgrader validate` (and JupyterLab's Validate button) read this file in
the folder JupyterLab or the command starts in; without one, nbgrader warns "No nbgrader_config.py file found". It sets
nothing: an exchange's settings (fetching, submitting) come from the file your instructor hands out,
~/.jupyter/nbgrader_config.py, which nbgrader reads as well.
"""
