// Exposure and tone mapping of the additive light buffer, then display gamma.
uniform sampler2D u_light;
uniform float u_exposure;
uniform int u_tone_map;       // 0: 1 - exp(-x), 1: x / (1 + x), 2: clipped
uniform vec3 u_background;
uniform vec2 u_size;          // the frame, px
uniform float u_disc;         // a dome master's radius, px: black beyond it (0: no disc)

varying vec2 v_uv;

void main() {
    vec3 x = max(texture2D(u_light, v_uv).rgb, 0.0) * u_exposure;
    vec3 c;
    if (u_tone_map == 0)
        c = 1.0 - exp(-x);
    else if (u_tone_map == 1)
        c = x / (1.0 + x);
    else
        c = clamp(x, 0.0, 1.0);
    c = pow(c, vec3(1.0 / 2.2));
    bool off_dome = u_disc > 0.0 && length((v_uv - 0.5) * u_size) > u_disc;
    gl_FragColor = off_dome ? vec4(0.0, 0.0, 0.0, 1.0)
                            : vec4(u_background + (1.0 - u_background) * c, 1.0);
}
