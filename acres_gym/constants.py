"""Fixed constants and enumerations of the Ranger model.

Enum numbers follow ds_dbw_msgs 2.3.11 (see ``shared/reference/ds_dbw_msgs.md``) so a recorded
command can be replayed unchanged. The physics tick is fixed at 120 Hz (seed ``002``: "a physics step
(fixed Dt, 120 Hz in the game)").
"""

PHYSICS_HZ = 120
DT_S = 1.0 / PHYSICS_HZ
STANDARD_GRAVITY_MPS2 = 9.80665  # seed 000: StandardGravityMps2
RPM_TO_RAD_S = 3.141592653589793 / 30.0
RAD_S_TO_RPM = 30.0 / 3.141592653589793

# EUtvGear, numbered as ds_dbw_msgs/Gear (H = DRIVE, L = LOW).
GEAR_NONE = 0
GEAR_PARK = 1
GEAR_REVERSE = 2
GEAR_NEUTRAL = 3
GEAR_HIGH = 4
GEAR_LOW = 5
GEAR_NAMES = {GEAR_NONE: "NONE", GEAR_PARK: "P", GEAR_REVERSE: "R", GEAR_NEUTRAL: "N",
              GEAR_HIGH: "H", GEAR_LOW: "L"}

# ds_dbw_msgs/GearReject.
GEAR_REJECT_NONE = 0
GEAR_REJECT_FAULT = 1
GEAR_REJECT_UNSUPPORTED = 2
GEAR_REJECT_SHIFT_IN_PROGRESS = 3
GEAR_REJECT_OVERRIDE = 4
GEAR_REJECT_BRAKE_HOLD = 5
GEAR_REJECT_VEHICLE_SPEED = 6
GEAR_REJECT_VEHICLE = 7

# Why a vehicle stopped (state ``diverged_reason``; ``diverged`` is set with it and the vehicle is frozen).
DIVERGED_NONE = 0
DIVERGED_NON_FINITE = 1  # a non-finite engine or wheel speed
DIVERGED_SPEED = 2  # body speed or rotation rate beyond the model's bounds (chassis.DIVERGED_SPEED_MPS)
DIVERGED_BELOW_GROUND = 3  # the centre of mass sank below the ground (the body itself has no contact)
DIVERGED_REASON_NAMES = {DIVERGED_NONE: "none", DIVERGED_NON_FINITE: "non-finite", DIVERGED_SPEED: "speed",
                         DIVERGED_BELOW_GROUND: "below ground"}

# EUtvDriveMode: positions of the AWD switch.
DRIVE_TURF = 0
DRIVE_TWO_WHEEL = 1
DRIVE_ALL_WHEEL = 2
DRIVE_MODE_NAMES = {DRIVE_TURF: "turf", DRIVE_TWO_WHEEL: "2wd", DRIVE_ALL_WHEEL: "awd"}

# EDbwSteerMode, numbered as ds_dbw_msgs/SteeringCmd.
STEER_NONE = 0
STEER_ANGLE = 2
STEER_CURVATURE = 3
STEER_YAW_RATE = 4
STEER_PERCENT = 14

# EDbwPedalMode, numbered as ds_dbw_msgs/ThrottleCmd and BrakeCmd.
PEDAL_NONE = 0
PEDAL_BRAKE_PRESSURE = 1
PEDAL_RAW = 13
PEDAL_PERCENT = 14

# EUlcMode, numbered as ds_dbw_msgs/UlcCmd.
ULC_NONE = 0
ULC_VELOCITY = 1
ULC_ACCEL = 2

# Wheel order (seed: 0 front left, 1 front right, 2 rear left, 3 rear right).
WHEEL_FL, WHEEL_FR, WHEEL_RL, WHEEL_RR = 0, 1, 2, 3
WHEEL_NAMES = ("front_left", "front_right", "rear_left", "rear_right")
