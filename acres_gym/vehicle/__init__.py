"""The vehicle wing: what runs against the real vehicle's logs and beside its DBW.

- ``command_log``: the DBW command log (a CSV of timed ds_dbw messages) and its reader;
- ``replay``: ``acres-replay``, a command log or bag run on the model, its reports and state written out;
- ``bags``: ROS 2 bags of ds_dbw_msgs commands and reports, read and written (``acres-bag-to-csv``);
- ``calibrate``: ``acres-calibrate``, the model's parameters fitted to a bag of commands and reports;
- ``deploy``: ``PolicyRuntime``, an exported policy beside the DBW (numpy and onnxruntime only);
- ``cli``: what their command lines share (the example logs, one-line errors, the output file).

Imports point down: ``calibrate`` reads ``replay`` and ``bags``, ``replay`` reads ``bags`` (on use), both
read ``command_log`` and ``cli``; ``deploy`` reads none of them and nothing that loads numba.
"""
