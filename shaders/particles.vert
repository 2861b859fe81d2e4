// Particle sprites. One vertex per particle: position, component code, speed.
uniform mat4 u_mvp;
uniform float u_point_size;   // sprite diameter in pixels
uniform float u_gain;         // light per particle (scaled with N by the renderer)
uniform int u_colour_mode;    // 0: by component, 1: by speed
uniform float u_speed_max;
uniform vec4 u_component[8];  // rgb and brightness weight per component code

attribute vec3 a_position;
attribute float a_component;
attribute float a_speed;

varying vec3 v_light;

// blue -> cyan -> white -> yellow -> red for t in [0, 1]
vec3 speed_colour(float t) {
    t = clamp(t, 0.0, 1.0) * 4.0;
    vec3 c0 = vec3(0.15, 0.25, 1.0), c1 = vec3(0.2, 0.9, 1.0), c2 = vec3(1.0);
    vec3 c3 = vec3(1.0, 0.85, 0.25), c4 = vec3(1.0, 0.25, 0.1);
    if (t < 1.0) return mix(c0, c1, t);
    if (t < 2.0) return mix(c1, c2, t - 1.0);
    if (t < 3.0) return mix(c2, c3, t - 2.0);
    return mix(c3, c4, t - 3.0);
}

void main() {
    gl_Position = u_mvp * vec4(a_position, 1.0);
    int code = int(clamp(a_component + 0.5, 0.0, 7.0));
    vec4 cw = u_component[code];
    float size = code == 3 ? 2.5 * u_point_size : u_point_size;  // black holes stand out
    vec3 rgb = u_colour_mode == 0 ? cw.rgb : speed_colour(a_speed / u_speed_max);
    // the same light per particle whatever the sprite size (3 px is the reference)
    v_light = rgb * cw.a * u_gain * 9.0 / max(size * size, 1.0);
    gl_PointSize = size;
}
